/**
 * The conversation manager (seed 002, `negotiate`): routes an action to a
 * tool, decides alignment and permission in the conversation, validates the
 * args, and runs the action (src/core/action-execution.ts) with a shared
 * context bound to the conversation and the tool. Outcomes carry codes; the
 * transports choose statuses.
 */
import { checkInSandbox, runAction, type ExecutionDeps } from './action-execution';
import type { ApprovalService } from './approvals';
import type { AuditService, NegotiationAudit, NegotiationTrail } from './audit';
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from './errors';
import type { OutcomeKeeper } from './idempotency';
import { fail, type NegotiateRequest, type NegotiationResult, type Routing } from './negotiation';
import { LEVEL_NAMES, type PermissionService, effectiveLevel, isLevel } from './permissions';
import { deniedBy } from './policy';
import type { ConversationStore, DecisionStore, NegotiationObserver } from './ports';
import { type Principal, actorOf, canCreate, checkConversationAccess } from './principal';
import { parseSpecialAction } from './special-actions';
import type { CatalogSnapshot, RoutedAction, ToolCatalog, ToolView } from './tool-catalog';
import { baseAlignment } from './tool-catalog';
import type { Level } from './tool-interface';

export type { NegotiateRequest, NegotiationResult, Routing } from './negotiation';

export interface ConversationManagerDeps extends ExecutionDeps {
  catalog: ToolCatalog;
  decisions: DecisionStore;
  /** Where a level is set (negotiate's `upgrade:`), with its history, settling and audit entry. */
  levels: PermissionService;
  conversations: ConversationStore;
  approvals: ApprovalService;
  /** Without it nothing is audited (tools' own tests, benches of the bare path). */
  audit?: AuditService;
  /** Metrics and traces of each negotiation (src/observability); without it, none. */
  observer?: NegotiationObserver;
}

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
      result = await this.decide(p, conversationId, req, trail, options.keeper);
    } catch (err) {
      trail?.failed(err);
      throw err;
    }
    trail?.done(result);
    return result;
  }

  private decide(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    trail: NegotiationTrail | undefined,
    keeper: OutcomeKeeper | undefined,
  ): Promise<NegotiationResult> {
    const snapshot = this.deps.catalog.snapshot();
    const special = parseSpecialAction(req.action);
    if (special?.kind === 'list-tools') return this.listTools(p, conversationId, req, trail);
    if (special) return this.upgrade(p, conversationId, snapshot, special.tool, special.levelText, req, trail);
    return this.routeAndRun(p, conversationId, snapshot, req, trail, keeper);
  }

  /** The audit entry of a conversation this call created on first use. */
  private async createdBy(trail: NegotiationTrail | undefined, conversationId: string): Promise<void> {
    if (!trail) return;
    await this.deps.audit?.record('conversation.created', {
      conversationId,
      actor: trail.actor,
      requestId: trail.requestId,
      outcome: 'success',
    });
  }

  /** The conversation's owner as `p` may use it: created for a user or admin (not on a dry run), else read. */
  private async ownerFor(
    p: Principal,
    conversationId: string,
    create: boolean,
    trail?: NegotiationTrail,
  ): Promise<string | null | undefined> {
    const { conversations } = this.deps;
    let owner: string | null | undefined;
    if (create && canCreate(p)) {
      const ensured = await conversations.ensure(conversationId, p.subject);
      owner = ensured.owner;
      if (ensured.created) await this.createdBy(trail, conversationId);
    } else {
      owner = await conversations.owner(conversationId);
    }
    // A dry run on a conversation that does not exist yet: a user or admin would create (and own) it.
    return owner === undefined && canCreate(p) ? p.subject : owner;
  }

  private async listTools(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    trail: NegotiationTrail | undefined,
  ): Promise<NegotiationResult> {
    checkConversationAccess(
      p,
      conversationId,
      await this.ownerFor(p, conversationId, !req.dryRun, trail),
      'negotiate',
      'negotiate',
    );
    const tools: ToolView[] = this.deps.catalog.toolViews();
    return { success: true, ...(req.dryRun ? {} : { output: { tools } }), alignment: 'aligned' };
  }

  private async upgrade(
    p: Principal,
    conversationId: string,
    snapshot: CatalogSnapshot,
    tool: string,
    levelText: string,
    req: NegotiateRequest,
    trail: NegotiationTrail | undefined,
  ): Promise<NegotiationResult> {
    const level = /^[0-9]$/.test(levelText) ? Number(levelText) : NaN;
    if (!isLevel(level)) {
      return fail(
        'invalid_args',
        `Invalid level "${levelText.slice(0, 32)}": use upgrade:TOOL:level-N with N = 1, 2 or 3`,
      );
    }
    if (!snapshot.set.byName.has(tool)) return fail('unknown_tool', `Unknown tool: ${tool.slice(0, 64)}`);
    if (p.role === 'agent') return this.agentUpgrade(p, conversationId, tool, level, req);
    if (req.dryRun) {
      checkConversationAccess(p, conversationId, await this.ownerFor(p, conversationId, false), 'manage', 'upgrade');
      return { success: true, alignment: 'aligned' };
    }
    // The owner check is made inside the change's own transaction (no separate round trip, no gap).
    const set = await this.deps.levels.setLevel({
      conversationId,
      tool,
      level,
      by: actorOf(p),
      requestId: trail?.requestId ?? '-',
      principal: p,
    });
    const change = { tool: set.tool, level: set.level, previousLevel: set.previousLevel };
    return { success: true, output: change, alignment: 'aligned' };
  }

  /**
   * An agent never raises its own tools' levels: the request is refused as
   * one that needs the owner's approval (or as over the key's ceiling).
   */
  private async agentUpgrade(
    p: Principal,
    conversationId: string,
    tool: string,
    level: Level,
    req: NegotiateRequest,
  ): Promise<NegotiationResult> {
    // One read gives the owner (access) and the tool's current level (the approval request's).
    const ctx = await this.deps.decisions.load(conversationId, tool, undefined);
    checkConversationAccess(p, conversationId, ctx.exists ? ctx.owner : undefined, 'negotiate', 'negotiate');
    if (p.maxLevel !== undefined && level > p.maxLevel)
      return ceiling(p.maxLevel, `upgrade:${tool}:level-${level}`, level);
    const action = `upgrade:${tool}:level-${level}`;
    if (req.approvalId !== undefined) {
      const verdict = await this.deps.approvals.checkRetry(conversationId, req.approvalId, {
        kind: 'upgrade',
        tool,
        action,
        args: {},
        requestedBy: actorOf(p),
      });
      if ('refusal' in verdict) return { ...verdict.refusal, alignment: 'agnostic' };
      if ('once' in verdict && !req.dryRun) {
        const change = await this.deps.approvals.claimUpgrade(verdict.once, level);
        if (!change) return fail('approval_used', `Approval ${verdict.once.id} was already used; it covered one run`);
        return { success: true, output: change, alignment: 'aligned' };
      }
      if ('once' in verdict) return { success: true, alignment: 'aligned' };
      // An approval for the conversation already set the level: asking again needs no new request.
    }
    const current = effectiveLevel(ctx.explicitLevel, ctx.legacyLevel).level;
    return fail(
      'permission_required',
      `Permission upgrade required: only the conversation's owner or an admin can set ${tool}'s level`,
      {
        requiresApproval: true,
        approvalReason:
          `Permission upgrade required: an agent asked to set ${tool} to level ${level} (${LEVEL_NAMES[level]}) ` +
          `in this conversation. The conversation owner (or an admin) can approve with upgrade:${tool}:level-${level}.`,
        // A dry run records nothing (it executes nothing, and a what-if is no request).
        ...(req.dryRun
          ? {}
          : {
              approval: await this.deps.approvals.record(p, {
                conversationId,
                kind: 'upgrade',
                tool,
                action,
                args: {},
                requiredLevel: level,
                currentLevel: current,
              }),
            }),
        alignment: 'agnostic',
      },
    );
  }

  private async routeAndRun(
    p: Principal,
    conversationId: string,
    snapshot: CatalogSnapshot,
    req: NegotiateRequest,
    trail: NegotiationTrail | undefined,
    keeper: OutcomeKeeper | undefined,
  ): Promise<NegotiationResult> {
    const route = snapshot.router.route(req.action, req.tool);
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
        return this.decideAndRun(
          p,
          conversationId,
          route.entry,
          { confidence: route.confidence, explicit: route.explicit },
          req,
          trail,
          keeper,
        );
    }
  }

  private async decideAndRun(
    p: Principal,
    conversationId: string,
    entry: RoutedAction,
    how: { confidence: number; explicit: boolean },
    req: NegotiateRequest,
    trail: NegotiationTrail | undefined,
    keeper: OutcomeKeeper | undefined,
  ): Promise<NegotiationResult> {
    const action = entry.loaded;
    const routing: Routing = {
      tool: action.tool,
      action: action.name,
      confidence: how.confidence,
      explicit: how.explicit,
    };
    const parsed = action.parseArgs(req.args ?? {});
    const prefetch = parsed.ok && !req.dryRun ? action.prefetch?.(parsed.value) : undefined;
    const creator = !req.dryRun && canCreate(p) ? p.subject : undefined;
    // Does `p` wait on an approval request for this action? Asked in the decision's own statement, and only
    // for a call that could have been refused for its level (above 1) and will run (not a dry run).
    const waitingFor = action.level > 1 && !req.dryRun ? { action: action.name, requestedBy: actorOf(p) } : undefined;
    const ctx = await this.deps.decisions.load(conversationId, action.tool, creator, prefetch, waitingFor);
    // Who may act here is decided from the owner read with the decision: no round trip of its own.
    const owner = ctx.exists ? ctx.owner : canCreate(p) ? p.subject : undefined;
    checkConversationAccess(p, conversationId, owner, 'negotiate', 'negotiate');
    if (ctx.created) await this.createdBy(trail, conversationId);
    if (ctx.policyProblem) {
      this.deps.logger.warn(
        { conversationId, problem: ctx.policyProblem },
        'stored policy unreadable: denying every action',
      );
    }

    // The policy comes first: a denied action is a contradiction whatever the tool's level.
    const deny = deniedBy(ctx.policy, action.qualifiedName);
    if (deny) {
      return fail('denied', `Action ${action.qualifiedName} is denied by this conversation's policy (${deny})`, {
        alignment: 'contradiction',
        routing,
      });
    }
    const alignment = baseAlignment(action.level);
    // An agent key's ceiling: above it nothing runs, whatever the tool's level, and no approval helps.
    if (p.maxLevel !== undefined && action.level > p.maxLevel) {
      return { ...ceiling(p.maxLevel, action.qualifiedName, action.level), alignment, routing };
    }
    // The args before the level: a call that could not run once approved is refused as what it is, and
    // no approval request is recorded for it.
    if (!parsed.ok) {
      return fail('invalid_args', `Invalid args for ${action.qualifiedName}: ${parsed.path}: ${parsed.message}`, {
        alignment,
        routing,
      });
    }
    const current = effectiveLevel(ctx.explicitLevel, ctx.legacyLevel).level;
    // A retry under an approval (API.md, Approvals): checked here, consumed in the action's transaction.
    let claim: ExecutionDeps['claim'];
    if (req.approvalId !== undefined) {
      const verdict = await this.deps.approvals.checkRetry(conversationId, req.approvalId, {
        kind: 'call',
        tool: action.tool,
        action: action.name,
        args: req.args ?? {},
        requestedBy: actorOf(p),
      });
      if ('refusal' in verdict) return { ...verdict.refusal, alignment, routing };
      if ('once' in verdict) claim = this.deps.approvals.claimer(verdict.once);
    }
    const needsApproval = current < action.level && !claim;
    // An isolated tool's schema is applied in its worker: asked there before a request is recorded (and on
    // a dry run); a call that runs has it applied by the run itself.
    if (action.checkArgs && (needsApproval || req.dryRun)) {
      const problem = await checkInSandbox(this.deps, action, parsed.value, { alignment, routing });
      if (problem) return problem;
    }
    if (needsApproval) {
      return fail('permission_required', `Permission upgrade required for ${action.qualifiedName}`, {
        requiresApproval: true,
        approvalReason: approvalReason(action.tool, action.name, action.level, current),
        // A dry run records nothing (it executes nothing, and a what-if is no request).
        ...(req.dryRun
          ? {}
          : {
              approval: await this.deps.approvals.record(p, {
                conversationId,
                kind: 'call',
                tool: action.tool,
                action: action.name,
                args: req.args ?? {},
                requiredLevel: action.level,
                currentLevel: current,
              }),
            }),
        alignment,
        routing,
      });
    }
    if (req.dryRun) return { success: true, alignment, routing };
    const deps = claim ? { ...this.deps, claim } : this.deps;
    const result = await runAction(
      deps,
      conversationId,
      action,
      parsed.value,
      { alignment, routing },
      ctx.prefetched,
      keeper,
      trail,
    );
    if (result.success && ctx.waiting) await this.settleWaiting(p, conversationId, action.tool, action.name, req);
    return result;
  }

  /**
   * The call ran, and `p` had a pending request for this action: the one for
   * these args (if that is the one) no longer waits on anyone. The call has
   * committed, so a failure here is only logged: the request then lapses.
   */
  private async settleWaiting(
    p: Principal,
    conversationId: string,
    tool: string,
    action: string,
    req: NegotiateRequest,
  ): Promise<void> {
    try {
      await this.deps.approvals.satisfied(p, conversationId, { tool, action, args: req.args ?? {} });
    } catch (err) {
      this.deps.logger.warn({ err, conversationId, tool, action }, 'approvals: a pending request could not be settled');
    }
  }
}

function ceiling(maxLevel: number, what: string, level: number): NegotiationResult {
  return fail(
    'level_ceiling',
    `${what} needs level ${level}, above this agent key's ceiling (maxLevel ${maxLevel}); it cannot run with this key`,
  );
}

export function approvalReason(tool: string, action: string, required: Level, current: Level): string {
  return (
    `Permission upgrade required: ${tool} needs level ${required} (${LEVEL_NAMES[required]}) for ${action}, ` +
    `but its current level in this conversation is ${current} (${LEVEL_NAMES[current]}). ` +
    `The conversation owner can approve with upgrade:${tool}:level-${required}.`
  );
}
