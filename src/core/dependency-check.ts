/**
 * negotiate's check of an action's `requires` (API.md, "Tool dependencies"):
 * answered from the resources the decision's own statement read
 * (DecisionContext.required), so it adds no round trip, and actions that
 * declare nothing skip it entirely. A check at decision time: the handler
 * still reads the live shared context (a resource deleted in between is the
 * handler's resource_not_found, as before).
 */
import type { Decided } from './action-execution';
import { fail, type NegotiationResult } from './negotiation';
import type { DecisionContext } from './ports';
import { unmetRequirements, type ContractAction, type MissingDependency } from './tool-dependencies';

const REASONS: Record<MissingDependency['reason'], string> = {
  absent: 'it does not exist',
  created_by: 'it was created by another tool than required',
  schema: 'its data does not match the required schema',
};

function describe(m: MissingDependency): string {
  const from = m.producers.length > 0 ? `; produced by ${m.producers.join(', ')}` : '';
  return `${m.resource} (${REASONS[m.reason]}${from})`;
}

/** 409 dependency_unmet with `output.missing`, or undefined when every requirement is met (or none is declared). */
export function dependencyRefusal(
  call: { action: ContractAction; args: Record<string, unknown> },
  ctx: Pick<DecisionContext, 'required'>,
  allActions: () => readonly ContractAction[],
  decided: Decided,
): NegotiationResult | undefined {
  if (!ctx.required) return undefined;
  const { action, args } = call;
  const missing = unmetRequirements(action, args, ctx.required, allActions());
  if (missing.length === 0) return undefined;
  return fail('dependency_unmet', `${action.qualifiedName} needs first: ${missing.map(describe).join('; ')}`, {
    output: { missing },
    ...decided,
  });
}
