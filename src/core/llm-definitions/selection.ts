/**
 * Which actions a caller is shown, and in what order, for both the
 * definitions and the system prompt: what the policy allows, sorted by
 * qualified name, or ranked by a `query` (ranking.ts) and cut to a `limit`;
 * and which tools offer the same action, so a description can say so.
 */
import { compareNames } from '../naming';
import { deniedBy, type TPolicy } from '../policy';
import type { LoadedAction, ToolSet } from '../tool-registry';
import { hasQueryWords, rankActions } from './ranking';

export interface SelectOptions {
  /** Free text: actions are ranked by relevance to it, most relevant first. */
  query?: string;
  /** Keep only the first `limit` actions (after ranking). */
  limit?: number;
  /** Actions this policy denies are left out. */
  policy?: TPolicy;
  /** Actions above this level are left out (an agent key's ceiling). */
  maxLevel?: number;
}

function byQualifiedName(a: LoadedAction, b: LoadedAction): number {
  return compareNames(a.qualifiedName, b.qualifiedName);
}

/** The actions the policy allows (at or below `maxLevel`), sorted by qualified name. */
export function allowedActions(set: ToolSet, policy?: TPolicy, maxLevel?: number): LoadedAction[] {
  const allowed = set.actions.filter(
    (a) =>
      (policy === undefined || deniedBy(policy, a.qualifiedName) === undefined) &&
      (maxLevel === undefined || a.level <= maxLevel),
  );
  return allowed.sort(byQualifiedName);
}

/**
 * What a definitions request returns, in order: the allowed actions, ranked
 * by `query` when one is given (sorted by qualified name otherwise), then cut
 * to `limit`.
 */
export function selectActions(set: ToolSet, options: SelectOptions = {}): LoadedAction[] {
  const allowed = allowedActions(set, options.policy, options.maxLevel);
  const ranked = hasQueryWords(options.query) ? rankActions(set, allowed, options.query).map((r) => r.action) : allowed;
  return options.limit === undefined ? ranked : ranked.slice(0, Math.max(0, options.limit));
}

/** Action name -> the tools offering it, among the actions a caller can see. */
export function offeredBy(actions: readonly LoadedAction[]): Map<string, LoadedAction[]> {
  const byName = new Map<string, LoadedAction[]>();
  for (const a of actions) byName.set(a.name, [...(byName.get(a.name) ?? []), a]);
  return byName;
}
