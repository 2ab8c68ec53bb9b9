/**
 * The conversation manager (seed 002, `negotiate`): routes an action to a
 * tool, decides alignment and permission in the conversation, validates the
 * args, and runs the action (src/core/action-execution.ts) with a shared
 * context bound to the conversation and the tool. Outcomes carry codes; the
 * transports choose statuses.
 */
import { checkInSandbox, runAction, type ExecutionDeps } from './action-execution';
import { fail, type NegotiateRequest, type NegotiationResult, type Routing } from './negotiation';
import { LEVEL_NAMES, effectiveLevel, isLevel } from './permissions';
import { deniedBy } from './policy';
import type { ConversationStore, DecisionStore, PermissionStore } from './ports';
import { parseSpecialAction } from './special-actions';
import type { CatalogSnapshot, RoutedAction, ToolCatalog, ToolView } from './tool-catalog';
import { baseAlignment } from './tool-catalog';
import type { Level } from './tool-interface';

export type { NegotiateRequest, NegotiationResult, Routing } from './negotiation';

export interface ConversationManagerDeps extends ExecutionDeps {
  catalog: ToolCatalog;
  decisions: DecisionStore;
  permissions: PermissionStore;
  conversations: ConversationStore;
}

export class ConversationManager {
  constructor(private readonly deps: ConversationManagerDeps) {}

  async negotiate(conversationId: string, req: NegotiateRequest): Promise<NegotiationResult> {
    const snapshot = this.deps.catalog.snapshot();
    const special = parseSpecialAction(req.action);
    if (special?.kind === 'list-tools') return this.listTools(conversationId, req);
    if (special) return this.upgrade(conversationId, snapshot, special.tool, special.levelText, req);
    return this.routeAndRun(conversationId, snapshot, req);
  }

  private async listTools(conversationId: string, req: NegotiateRequest): Promise<NegotiationResult> {
    if (!req.dryRun) await this.deps.conversations.ensure(conversationId);
    const tools: ToolView[] = this.deps.catalog.toolViews();
    return { success: true, ...(req.dryRun ? {} : { output: { tools } }), alignment: 'aligned' };
  }

  private async upgrade(
    conversationId: string,
    snapshot: CatalogSnapshot,
    tool: string,
    levelText: string,
    req: NegotiateRequest,
  ): Promise<NegotiationResult> {
    const level = /^[0-9]$/.test(levelText) ? Number(levelText) : NaN;
    if (!isLevel(level)) {
      return fail(
        'invalid_args',
        `Invalid level "${levelText.slice(0, 32)}": use upgrade:TOOL:level-N with N = 1, 2 or 3`,
      );
    }
    if (!snapshot.set.byName.has(tool)) return fail('unknown_tool', `Unknown tool: ${tool.slice(0, 64)}`);
    if (req.dryRun) return { success: true, alignment: 'aligned' };
    const change = await this.deps.permissions.setLevel(conversationId, tool, level, 'negotiate');
    return { success: true, output: change, alignment: 'aligned' };
  }

  private async routeAndRun(
    conversationId: string,
    snapshot: CatalogSnapshot,
    req: NegotiateRequest,
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
          conversationId,
          route.entry,
          { confidence: route.confidence, explicit: route.explicit },
          req,
        );
    }
  }

  private async decideAndRun(
    conversationId: string,
    entry: RoutedAction,
    how: { confidence: number; explicit: boolean },
    req: NegotiateRequest,
  ): Promise<NegotiationResult> {
    const action = entry.loaded;
    const routing: Routing = {
      tool: action.tool,
      action: action.name,
      confidence: how.confidence,
      explicit: how.explicit,
    };
    // Args are parsed first only to learn a read action's declared resource;
    // their errors are reported after the permission decision, as before.
    const parsed = action.parseArgs(req.args ?? {});
    const prefetch = parsed.ok && !req.dryRun ? action.prefetch?.(parsed.value) : undefined;
    const ctx = await this.deps.decisions.load(conversationId, action.tool, !req.dryRun, prefetch);
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
    const current = effectiveLevel(ctx.explicitLevel, ctx.legacyLevel).level;
    if (current < action.level) {
      return fail('permission_required', `Permission upgrade required for ${action.qualifiedName}`, {
        requiresApproval: true,
        approvalReason: approvalReason(action.tool, action.name, action.level, current),
        alignment,
        routing,
      });
    }
    if (!parsed.ok) {
      return fail('invalid_args', `Invalid args for ${action.qualifiedName}: ${parsed.path}: ${parsed.message}`, {
        alignment,
        routing,
      });
    }
    if (req.dryRun) {
      const problem = action.checkArgs
        ? await checkInSandbox(this.deps, action, parsed.value, { alignment, routing })
        : undefined;
      return problem ?? { success: true, alignment, routing };
    }
    return runAction(this.deps, conversationId, action, parsed.value, { alignment, routing }, ctx.prefetched);
  }
}

export function approvalReason(tool: string, action: string, required: Level, current: Level): string {
  return (
    `Permission upgrade required: ${tool} needs level ${required} (${LEVEL_NAMES[required]}) for ${action}, ` +
    `but its current level in this conversation is ${current} (${LEVEL_NAMES[current]}). ` +
    `The conversation owner can approve with upgrade:${tool}:level-${required}.`
  );
}
