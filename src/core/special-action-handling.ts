/**
 * negotiate's special actions (parsed in src/core/special-actions.ts), run
 * by the service itself: `list-tools`, and `upgrade:TOOL:level-N` (an owner
 * or admin sets the level through PermissionService.setLevel; an agent is
 * refused as needing the owner's approval, or runs under one).
 */
import { dependencyOrder } from './llm-definitions/order';
import { fail, type NegotiationResult } from './negotiation';
import { type ConversationManagerDeps, type NegotiationCall, ceiling, ownerFor } from './negotiation-call';
import { LEVEL_NAMES, effectiveLevel, isLevel } from './permissions';
import { actorOf, checkConversationAccess } from './principal';
import type { CatalogSnapshot, ToolView } from './tool-catalog';
import type { Level } from './tool-interface';

export async function listTools(deps: ConversationManagerDeps, call: NegotiationCall): Promise<NegotiationResult> {
  const { p, conversationId, req } = call;
  checkConversationAccess(p, conversationId, await ownerFor(deps, call, !req.dryRun), 'negotiate', 'negotiate');
  // As GET /tools: a quarantined action is shown to admins only.
  const tools: ToolView[] = deps.catalog.toolViews(p.role === 'admin');
  if (req.dryRun) return { success: true, alignment: 'aligned' };
  // The order the tools' contracts impose (API.md, "Tool dependencies"), as the system prompt names it.
  const { callable } = deps.catalog.snapshot();
  return { success: true, output: { tools, order: dependencyOrder(callable, callable.actions) }, alignment: 'aligned' };
}

export async function upgrade(
  deps: ConversationManagerDeps,
  call: NegotiationCall,
  snapshot: CatalogSnapshot,
  target: { tool: string; levelText: string },
): Promise<NegotiationResult> {
  const { p, conversationId, req, trail } = call;
  const { tool, levelText } = target;
  const level = /^[0-9]$/.test(levelText) ? Number(levelText) : NaN;
  if (!isLevel(level)) {
    return fail(
      'invalid_args',
      `Invalid level "${levelText.slice(0, 32)}": use upgrade:TOOL:level-N with N = 1, 2 or 3`,
    );
  }
  if (!snapshot.set.byName.has(tool)) return fail('unknown_tool', `Unknown tool: ${tool.slice(0, 64)}`);
  if (p.role === 'agent') return agentUpgrade(deps, call, tool, level);
  if (req.dryRun) {
    checkConversationAccess(p, conversationId, await ownerFor(deps, call, false), 'manage', 'upgrade');
    return { success: true, alignment: 'aligned' };
  }
  // The owner check is made inside the change's own transaction (no separate round trip, no gap).
  const set = await deps.levels.setLevel({
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
async function agentUpgrade(
  deps: ConversationManagerDeps,
  call: NegotiationCall,
  tool: string,
  level: Level,
): Promise<NegotiationResult> {
  const { p, conversationId, req } = call;
  // One read gives the owner (access) and the tool's current level (the approval request's).
  const ctx = await deps.decisions.load(conversationId, tool, undefined);
  checkConversationAccess(p, conversationId, ctx.exists ? ctx.owner : undefined, 'negotiate', 'negotiate');
  if (p.maxLevel !== undefined && level > p.maxLevel)
    return ceiling(p.maxLevel, `upgrade:${tool}:level-${level}`, level);
  const action = `upgrade:${tool}:level-${level}`;
  if (req.approvalId !== undefined) {
    const verdict = await deps.approvals.checkRetry(conversationId, req.approvalId, {
      kind: 'upgrade',
      tool,
      action,
      args: {},
      requestedBy: actorOf(p),
    });
    if ('refusal' in verdict) return { ...verdict.refusal, alignment: 'agnostic' };
    if ('once' in verdict && !req.dryRun) {
      const change = await deps.approvals.claimUpgrade(verdict.once, level);
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
            approval: await deps.approvals.record(p, {
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
