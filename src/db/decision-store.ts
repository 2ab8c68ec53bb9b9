/**
 * The DecisionStore port: what negotiate needs to decide, in one round trip
 * for a known conversation.
 */
import { readStoredPolicy } from '../core/policy';
import type { DecisionContext, DecisionStore } from '../core/ports';
import { toResource, type ResourceRow } from './resource-store';
import { prepared, type Queryable } from './sql';

// A level granted until a time (an approval's, API.md Approvals) is not honoured past it, even before
// the sweep (PermissionService.endDueGrants) has put the previous level back: no round trip of its own.
const LEVEL = 'CASE WHEN p.expires_at <= now() THEN p.revert_to ELSE p.level END AS level';

/**
 * Whether principal $4 has a pending, unlapsed request for a call of action
 * $3 (a prefix of approvals_pending_call_key; null $3: never, at the cost of
 * one index descent that finds nothing). A call that then runs settles it
 * (src/core/approvals.ts, satisfied): this is what tells negotiate that the
 * extra statement is worth sending.
 */
const WAITING = `EXISTS (
    SELECT 1 FROM approvals a
    WHERE a.conversation_id = c.id AND a.kind = 'call' AND a.tool = $2 AND a.action = $3 AND a.requested_by = $4
      AND a.status = 'pending' AND a.expires_at > now()) AS waiting`;

const DECISION_SELECT = `
  SELECT c.legacy_level, c.policy, c.owner, ${LEVEL}, ${WAITING}
  FROM conversations c LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = $2
  WHERE c.id = $1`;

/**
 * The decision, plus the one resource a read action declared it will read.
 * Only read-level actions prefetch, and they are never refused for their
 * level, so nobody can be waiting on an approval for one: no WAITING here.
 * An expired resource is missing here as in the resource store (its LIVE).
 */
const DECISION_SELECT_PREFETCH = `
  SELECT c.legacy_level, c.policy, c.owner, ${LEVEL},
         r.name, r.data, r.created_by, r.updated_by, r.created_at, r.updated_at, r.version, r.expires_at
  FROM conversations c
  LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = $2
  LEFT JOIN resources r ON r.conversation_id = c.id AND r.name = $3
    AND (r.expires_at IS NULL OR r.expires_at > now())
  WHERE c.id = $1`;

/** Creates the conversation unless a concurrent request just did, and reads it either way. */
const DECISION_CREATE = `
  WITH created AS (
    INSERT INTO conversations (id, owner) VALUES ($1, $3) ON CONFLICT (id) DO NOTHING
    RETURNING id, legacy_level, policy, owner
  ), conv AS (
    SELECT id, legacy_level, policy, owner, true AS created FROM created
    UNION ALL
    SELECT id, legacy_level, policy, owner, false AS created FROM conversations WHERE id = $1
  )
  SELECT conv.legacy_level, conv.policy, conv.owner, ${LEVEL}, conv.created
  FROM conv LEFT JOIN tool_permissions p ON p.conversation_id = conv.id AND p.tool = $2
  LIMIT 1`;

type DecisionRow = {
  legacy_level: number | null;
  policy: unknown;
  owner: string | null;
  level: number | null;
  created?: boolean;
  waiting?: boolean;
} & Partial<Record<keyof ResourceRow, unknown>>;

export class SqlDecisionStore implements DecisionStore {
  constructor(private readonly pool: Queryable) {}

  async load(
    conversationId: string,
    tool: string,
    createOwner: string | undefined,
    prefetch?: string,
    waitingFor?: { action: string; requestedBy: string },
  ): Promise<DecisionContext> {
    const db = this.pool;
    const first =
      prefetch === undefined
        ? await prepared<DecisionRow>(db, 'decision_select', DECISION_SELECT, [
            conversationId,
            tool,
            waitingFor?.action ?? null,
            waitingFor?.requestedBy ?? null,
          ])
        : await prepared<DecisionRow>(db, 'decision_prefetch', DECISION_SELECT_PREFETCH, [
            conversationId,
            tool,
            prefetch,
          ]);
    let row = first.rows[0];
    // Only a row of the prefetching statement says whether the resource exists.
    const prefetched =
      row && prefetch !== undefined
        ? { name: prefetch, resource: row.name == null ? null : toResource(row as unknown as ResourceRow) }
        : undefined;
    // When a concurrent request inserted the conversation and committed while this INSERT waited
    // on it, DO NOTHING returns no row and the statement's snapshot does not see the row either:
    // run it again (its new snapshot sees the row, or inserts it if it is gone). Deciding without
    // the row would take the caller for the owner of someone else's conversation.
    for (let attempt = 1; !row && createOwner !== undefined; attempt++) {
      row = (await prepared<DecisionRow>(db, 'decision_create', DECISION_CREATE, [conversationId, tool, createOwner]))
        .rows[0];
      if (!row && attempt === 3) throw new Error(`Conversation ${conversationId} could neither be created nor read`);
    }
    if (!row) return { exists: false, legacyLevel: null, policy: { deny: [] }, explicitLevel: null };
    // The stored policy is parsed by the domain's rule (src/core/policy.ts): unreadable denies everything.
    const { policy, problem } = readStoredPolicy(row.policy);
    return {
      exists: true,
      ...(row.created ? { created: true } : {}),
      owner: row.owner,
      legacyLevel: row.legacy_level,
      policy,
      ...(problem ? { policyProblem: problem } : {}),
      explicitLevel: row.level,
      ...(prefetched ? { prefetched } : {}),
      // DECISION_CREATE's row has no `waiting`: a conversation that did not exist a moment ago has no requests.
      ...(row.waiting ? { waiting: true } : {}),
    };
  }
}
