/**
 * The conversation manager (seed 002, `negotiate`): routes an action to a
 * tool, decides alignment and permission in the conversation, validates the
 * args, and runs the action (src/core/action-execution.ts) with a shared
 * context bound to the conversation and the tool. Outcomes carry codes; the
 * transports choose statuses. The special actions are run by
 * src/core/special-action-handling.ts.
 */
import { type ActionCall, checkInSandbox, runAction, type Decided, type ExecutionDeps } from './action-execution';
import type { NegotiationAudit } from './audit';
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from './errors';
import type { OutcomeKeeper } from './idempotency';
import { fail, type NegotiateRequest, type NegotiationResult, type Routing } from './negotiation';
import { type ConversationManagerDeps, type NegotiationCall, ceiling, recordCreated } from './negotiation-call';
import { LEVEL_NAMES, effectiveLevel } from './permissions';
import { deniedBy } from './policy';
import { dependencyRefusal } from './dependency-check';
import type { DecisionContext, DecisionExtras } from './ports';
import { runRemote } from './remote-execution';
import { approvalAction, requiredLevel, saveAsProblem } from './save-as';
import { type Principal, actorOf, canCreate, checkConversationAccess } from './principal';
import { listTools, upgrade } from './special-action-handling';
import { parseSpecialAction } from './special-actions';
import type { CatalogSnapshot, RoutedAction } from './tool-catalog';
import { baseAlignment } from './tool-catalog';
import { requiredNames } from './tool-dependencies';
import type { Level } from './tool-interface';
import type { LoadedAction } from './tool-module';

export type { NegotiateRequest, NegotiationResult, Routing } from './negotiation';
export type { ConversationManagerDeps } from './negotiation-call';

export class ConversationManager {
  constructor(private readonly deps: ConversationManagerDeps) {}

  /**
   * Decides and runs one action for principal `p` in the conversation. A
   * conversation `p` may not see is not_found (thrown: the transports answer
   * it as they answer every other endpoint under the conversation); an
   * unknown one is created, owned by `p`, unless `p` is an agent.
   */
  negotiate(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    options: {
      /** With an Idempotency-Key (src/core/idempotency.ts): only an action that runs uses it. */
      keeper?: OutcomeKeeper;
      /** What the audit entry records of the request (its id). */
      meta?: NegotiationAudit;
    } = {},
  ): Promise<NegotiationResult> {
    // Here, the one path REST, idempotent replays' first runs and MCP's tools/call all take.
    const observer = this.deps.observer;
    if (!observer) return this.negotiateObserved(p, conversationId, req, options);
    return observer.observe(conversationId, req, () => this.negotiateObserved(p, conversationId, req, options));
  }

  private async negotiateObserved(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    options: { keeper?: OutcomeKeeper; meta?: NegotiationAudit },
  ): Promise<NegotiationResult> {
    // An agent's key names its one conversation: any other is refused before any work.
    if (p.role === 'agent' && p.conversationId !== conversationId) throw conversationNotFound(conversationId);
    // Refused before it is audited: an entry under this id would land in the keys' chain.
    if (conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
    // Every decision is audited: an action that wrote, with its transaction; the others queued (src/core/audit.ts).
    const trail = this.deps.audit?.negotiation(p, conversationId, req, options.meta ?? { requestId: '-' });
    let result: NegotiationResult;
    try {
      result = await this.decide({ p, conversationId, req, trail, keeper: options.keeper });
    } catch (err) {
      trail?.failed(err);
      throw err;
    }
    trail?.done(result);
    return result;
  }

  private decide(call: NegotiationCall): Promise<NegotiationResult> {
    const snapshot = this.deps.catalog.snapshot();
    const special = parseSpecialAction(call.req.action);
    if (special?.kind === 'list-tools') return listTools(this.deps, call);
    if (special) return upgrade(this.deps, call, snapshot, special);
    return this.routeAndRun(call, snapshot);
  }

  private async routeAndRun(call: NegotiationCall, snapshot: CatalogSnapshot): Promise<NegotiationResult> {
    const { req } = call;
    const route = snapshot.router.route(req.action, req.tool);
    // Anything but an exact hit may be a call naming a quarantined action (never routed to): refused as such.
    if (route.kind !== 'ok' || route.confidence < 1) {
      const held = snapshot.quarantined(req.action, req.tool);
      if (held) return quarantinedRefusal(held);
    }
    switch (route.kind) {
      case 'no_tool':
        return fail('no_tool', `No tool found for action: ${req.action.slice(0, 128)}`, {
          output: { suggestions: route.suggestions },
        });
      case 'unknown_tool':
        return fail('unknown_tool', route.message);
      case 'ambiguous':
        return fail(
          'ambiguous_action',
          `Several tools offer ${req.action.slice(0, 128)}: name one (${route.candidates.join(', ')})`,
          { output: { candidates: route.candidates } },
        );
      case 'ok':
        return this.decideAndRun(call, route.entry, { confidence: route.confidence, explicit: route.explicit });
    }
  }

  private async decideAndRun(
    call: NegotiationCall,
    entry: RoutedAction,
    how: { confidence: number; explicit: boolean },
  ): Promise<NegotiationResult> {
    const { p, req } = call;
    const action = entry.loaded;
    const routing: Routing = {
      tool: action.tool,
      action: action.name,
      confidence: how.confidence,
      explicit: how.explicit,
    };
    const parsed = action.parseArgs(req.args ?? {});
    const prefetch = parsed.ok && !req.dryRun && req.saveAs === undefined ? action.prefetch?.(parsed.value) : undefined;
    // The resources its requires name are read with the decision (src/core/dependency-check.ts).
    const required = parsed.ok ? requiredNames(action, parsed.value) : undefined;
    // A call that saves its result is a write (src/core/save-as.ts).
    const level = requiredLevel(action, req);
    const ctx = await this.loadDecision(call, action, level, { prefetch, required });

    // The policy comes first: a denied action is a contradiction whatever the tool's level.
    const deny = deniedBy(ctx.policy, action.qualifiedName);
    if (deny) {
      return fail('denied', `Action ${action.qualifiedName} is denied by this conversation's policy (${deny})`, {
        alignment: 'contradiction',
        routing,
      });
    }
    const alignment = baseAlignment(level);
    // An agent key's ceiling: above it nothing runs, whatever the tool's level, and no approval helps.
    if (p.maxLevel !== undefined && level > p.maxLevel) {
      return { ...ceiling(p.maxLevel, action.qualifiedName, level), alignment, routing };
    }
    // The args before the level: a call that could not run once approved is refused as what it is, and
    // no approval request is recorded for it.
    if (!parsed.ok) {
      return fail('invalid_args', `Invalid args for ${action.qualifiedName}: ${parsed.path}: ${parsed.message}`, {
        alignment,
        routing,
      });
    }
    const badName = saveAsProblem(req, { alignment, routing });
    if (badName) return badName;
    const decided: Decided = { alignment, routing };
    return this.approveAndRun(call, action, { args: parsed.value, ctx, decided, level });
  }

  /**
   * A call its policy, the key's ceiling and its args let through: run under
   * an approval, refused as needing one, or run at the tool's level.
   */
  private async approveAndRun(
    call: NegotiationCall,
    action: LoadedAction,
    decision: { args: Record<string, unknown>; ctx: DecisionContext; decided: Decided; level: Level },
  ): Promise<NegotiationResult> {
    const { conversationId, req } = call;
    const { args, ctx, decided, level } = decision;
    const { alignment, routing } = decided;
    const current = effectiveLevel(ctx.explicitLevel, ctx.legacyLevel).level;
    // A retry under an approval (API.md, Approvals): checked here, consumed in the action's transaction.
    const retry = await this.retryClaim(call, action, decided);
    if (retry && 'refusal' in retry) return retry.refusal;
    const claim = retry?.claim;
    const needsApproval = current < level && !claim;
    // An isolated tool's schema is applied in its worker: asked there before a request is recorded (and on
    // a dry run); a call that runs has it applied by the run itself.
    if (action.checkArgs && (needsApproval || req.dryRun)) {
      const problem = await checkInSandbox(this.deps, action, args, decided);
      if (problem) return problem;
    }
    if (needsApproval) return this.approvalRequired(call, action, { required: level, current }, decided);
    // Its requires, once it may run: a what-if reports them too, and a `once` approval is not spent on them.
    const unmet = dependencyRefusal(
      { action, args },
      ctx,
      () => this.deps.catalog.snapshot().callable.actions,
      decided,
    );
    if (unmet) return unmet;
    if (req.dryRun) return { success: true, alignment, routing };
    const deps = claim ? { ...this.deps, claim: claim.claim, release: claim.release } : this.deps;
    const { keeper, trail } = call;
    const run: ActionCall = { conversationId, action, args, decided, prefetched: ctx.prefetched, keeper, trail };
    if (req.saveAs !== undefined) run.saveAs = req.saveAs;
    // A participant's action: the owner's subject goes with the call (per-owner credentials), known from the
    // decision's own read.
    if (action.remote && ctx.owner) run.owner = ctx.owner;
    const result = await (action.remote ? runRemote(deps, run) : runAction(deps, run));
    if (result.success && ctx.waiting) await this.settleWaiting(call, action.tool, approvalAction(action, req));
    return result;
  }

  /**
   * The decision's one read (the conversation created for a user or admin
   * on first use), and who may act here decided from the owner it read.
   */
  private async loadDecision(
    call: NegotiationCall,
    action: LoadedAction,
    level: Level,
    reads: Pick<DecisionExtras, 'required'> & { prefetch: string | undefined },
  ): Promise<DecisionContext> {
    const { prefetch, required } = reads;
    const { p, conversationId, req, trail } = call;
    const creator = !req.dryRun && canCreate(p) ? p.subject : undefined;
    // Does `p` wait on an approval request for this action? Asked in the decision's own statement, and only
    // for a call that could have been refused for its level (above 1) and will run (not a dry run).
    const waitingFor =
      level > 1 && !req.dryRun ? { action: approvalAction(action, req), requestedBy: actorOf(p) } : undefined;
    const ctx = await this.deps.decisions.load(conversationId, action.tool, creator, prefetch, {
      waitingFor,
      required,
    });
    // Who may act here is decided from the owner read with the decision: no round trip of its own.
    const owner = ctx.exists ? ctx.owner : canCreate(p) ? p.subject : undefined;
    checkConversationAccess(p, conversationId, owner, 'negotiate', 'negotiate');
    if (ctx.created) await recordCreated(this.deps, trail, conversationId);
    if (ctx.policyProblem) {
      this.deps.logger.warn(
        { conversationId, problem: ctx.policyProblem },
        'stored policy unreadable: denying every action',
      );
    }
    return ctx;
  }

  /** A retry under an approval: its refusal, or the claim its run makes first; undefined without approvalId. */
  private async retryClaim(
    call: NegotiationCall,
    action: LoadedAction,
    decided: Decided,
  ): Promise<{ refusal: NegotiationResult } | { claim: OnceClaim | undefined } | undefined> {
    const { p, conversationId, req } = call;
    if (req.approvalId === undefined) return undefined;
    const verdict = await this.deps.approvals.checkRetry(conversationId, req.approvalId, {
      kind: 'call',
      tool: action.tool,
      action: approvalAction(action, req),
      args: req.args ?? {},
      requestedBy: actorOf(p),
    });
    if ('refusal' in verdict) return { refusal: { ...verdict.refusal, ...decided } };
    if ('once' in verdict) {
      const { approvals } = this.deps;
      return { claim: { claim: approvals.claimer(verdict.once), release: approvals.releaser(verdict.once) } };
    }
    return { claim: undefined };
  }

  /** The permission_required refusal of a call above the tool's level, with its approval request (not on a dry run). */
  private async approvalRequired(
    call: NegotiationCall,
    action: LoadedAction,
    levels: { required: Level; current: Level },
    decided: Decided,
  ): Promise<NegotiationResult> {
    const { p, conversationId, req } = call;
    const { required, current } = levels;
    return fail('permission_required', `Permission upgrade required for ${action.qualifiedName}`, {
      requiresApproval: true,
      approvalReason: approvalReason(action.tool, approvalAction(action, req), required, current),
      // A dry run records nothing (it executes nothing, and a what-if is no request).
      ...(req.dryRun
        ? {}
        : {
            approval: await this.deps.approvals.record(p, {
              conversationId,
              kind: 'call',
              tool: action.tool,
              action: approvalAction(action, req),
              args: req.args ?? {},
              requiredLevel: required,
              currentLevel: current,
            }),
          }),
      ...decided,
    });
  }

  /**
   * The call ran, and `p` had a pending request for this action: the one for
   * these args (if that is the one) no longer waits on anyone. The call has
   * committed, so a failure here is only logged: the request then lapses.
   */
  private async settleWaiting(call: NegotiationCall, tool: string, action: string): Promise<void> {
    const { p, conversationId, req } = call;
    try {
      await this.deps.approvals.satisfied(p, conversationId, { tool, action, args: req.args ?? {} });
    } catch (err) {
      this.deps.logger.warn({ err, conversationId, tool, action }, 'approvals: a pending request could not be settled');
    }
  }
}

/** A `once` approval's claim, and its giving back (a participant's call that never reached its upstream). */
interface OnceClaim {
  claim: NonNullable<ExecutionDeps['claim']>;
  release: NonNullable<ExecutionDeps['release']>;
}

/** 409 tool_definition_changed: a participant's action whose definition changed upstream (API.md, Pinning). */
function quarantinedRefusal(action: LoadedAction): NegotiationResult {
  const participant = action.remote?.participant ?? action.tool;
  return fail(
    'tool_definition_changed',
    `The definition of ${action.qualifiedName} changed at participant ${participant}; it cannot run until an admin approves the new definition`,
    {
      alignment: baseAlignment(action.level),
      routing: { tool: action.tool, action: action.name, confidence: 1, explicit: true },
    },
  );
}

export function approvalReason(tool: string, action: string, required: Level, current: Level): string {
  return (
    `Permission upgrade required: ${tool} needs level ${required} (${LEVEL_NAMES[required]}) for ${action}, ` +
    `but its current level in this conversation is ${current} (${LEVEL_NAMES[current]}). ` +
    `The conversation owner can approve with upgrade:${tool}:level-${required}.`
  );
}
