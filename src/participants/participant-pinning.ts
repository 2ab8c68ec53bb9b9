/**
 * Pinning (API.md, "Participants"): what a listing of the upstream's tools
 * does to a participant's actions. The first listing pins every definition
 * (SHA-256 of its canonical JSON). Later, a definition that differs from the
 * pinned one, or a tool that was not there before, makes its action
 * `quarantined` with the new definition kept as pending, until an admin
 * approves it (approve() pins it); a tool that went back to its pinned
 * definition is active again; a tool that disappeared is gone.
 */
import { actionNamesFor, definitionDigest } from './action-names';
import type { ActionRecord } from './participant-records';
import type { UpstreamTool } from './upstream';

export interface PinOutcome {
  actions: ActionRecord[];
  changed: boolean;
  /** Actions this listing quarantined (they were active, or did not exist). */
  quarantined: string[];
  /** Upstream names that disappeared. */
  removed: string[];
}

/** The tool as stored (its definition, schemas and default level), a plain JSON object. */
function stored(t: UpstreamTool): Record<string, unknown> {
  return JSON.parse(JSON.stringify(t)) as Record<string, unknown>;
}

function same(a: ActionRecord, b: ActionRecord): boolean {
  return (
    a.action === b.action &&
    a.level === b.level &&
    a.status === b.status &&
    a.pinnedDigest === b.pinnedDigest &&
    a.pendingDigest === b.pendingDigest
  );
}

function decide(t: UpstreamTool, action: string, existing: ActionRecord | undefined, initial: boolean): ActionRecord {
  const digest = definitionDigest(t.definition);
  const pinnedNow = { pinnedDefinition: stored(t), pinnedDigest: digest, pendingDefinition: null, pendingDigest: null };
  if (initial || existing?.pinnedDigest === digest) {
    // Pinned now, or back to (or still at) what is pinned: active.
    return { upstreamName: t.upstreamName, action, level: t.defaultLevel, status: 'active', ...pinnedNow };
  }
  if (existing?.status === 'quarantined' && existing.pendingDigest === digest) return { ...existing, action };
  return {
    upstreamName: t.upstreamName,
    action,
    level: t.defaultLevel,
    status: 'quarantined',
    pinnedDefinition: existing?.pinnedDefinition ?? null,
    pinnedDigest: existing?.pinnedDigest ?? null,
    pendingDefinition: stored(t),
    pendingDigest: digest,
  };
}

/**
 * The actions after a listing. `initial`: the participant was never listed
 * before (registration, or its first successful listing): everything is pinned.
 */
export function pin(current: readonly ActionRecord[], listed: readonly UpstreamTool[], initial: boolean): PinOutcome {
  const names = actionNamesFor(listed.map((t) => t.upstreamName));
  const byUpstream = new Map(current.map((a) => [a.upstreamName, a]));
  const seen = new Set<string>();
  const actions: ActionRecord[] = [];
  const quarantined: string[] = [];
  let changed = false;
  for (const t of listed) {
    if (seen.has(t.upstreamName)) continue; // an upstream listing a name twice: the first counts
    seen.add(t.upstreamName);
    const existing = byUpstream.get(t.upstreamName);
    const next = decide(t, names.get(t.upstreamName)!, existing, initial);
    if (next.status === 'quarantined' && existing?.status !== 'quarantined') quarantined.push(next.action);
    if (!existing || !same(existing, next)) changed = true;
    actions.push(next);
  }
  const removed = current.filter((a) => !seen.has(a.upstreamName)).map((a) => a.upstreamName);
  if (removed.length > 0) changed = true;
  return { actions, changed, quarantined, removed };
}

/** The action with its pending definition pinned; undefined when there is nothing to approve. */
export function approve(a: ActionRecord): ActionRecord | undefined {
  if (a.status !== 'quarantined' || a.pendingDefinition === null) return undefined;
  const level = (a.pendingDefinition as { defaultLevel?: unknown }).defaultLevel;
  return {
    ...a,
    level: level === 1 || level === 2 || level === 3 ? level : a.level,
    status: 'active',
    pinnedDefinition: a.pendingDefinition,
    pinnedDigest: a.pendingDigest,
    pendingDefinition: null,
    pendingDigest: null,
  };
}
