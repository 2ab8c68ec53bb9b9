/** The ConversationStore and DecisionStore ports in memory (src/db/conversation-store.ts, decision-store.ts). */
import { RESERVED_CONVERSATION_ID, reservedIdError } from '../../../src/core/errors';
import { readStoredPolicy, type TPolicy } from '../../../src/core/policy';
import type {
  ConversationStore,
  ConversationView,
  DecisionContext,
  DecisionExtras,
  DecisionStore,
} from '../../../src/core/ports';
import type { FoundResource } from '../../../src/core/tool-dependencies';
import { type ConversationRow, type MemoryDb, explicitLevelOf, key, newConversation } from './db';

export class MemoryConversationStore implements ConversationStore {
  constructor(private readonly db: MemoryDb) {}

  private view(id: string, r: ConversationRow): ConversationView {
    return { id, owner: r.owner, metadata: r.metadata, policy: readStoredPolicy(r.policy).policy, ...pick(r) };
  }

  create(
    id: string,
    metadata: Record<string, unknown>,
    policy: TPolicy,
    owner: string | null,
  ): Promise<ConversationView | undefined> {
    if (id === RESERVED_CONVERSATION_ID) throw reservedIdError();
    if (this.db.conversations.has(id)) return Promise.resolve(undefined);
    const now = this.db.now();
    const row: ConversationRow = { owner, metadata, policy, legacyLevel: null, createdAt: now, updatedAt: now };
    this.db.put(this.db.conversations, id, row);
    return Promise.resolve(this.view(id, row));
  }

  get(id: string): Promise<ConversationView | undefined> {
    const r = this.db.conversations.get(id);
    return Promise.resolve(r && this.view(id, r));
  }

  list(opts: { owner?: string; after?: string; limit: number }): Promise<ConversationView[]> {
    const ids = [...this.db.conversations.keys()].sort();
    const out = ids
      .filter((id) => opts.after === undefined || id > opts.after)
      .map((id) => this.view(id, this.db.conversations.get(id)!))
      .filter((v) => opts.owner === undefined || v.owner === opts.owner);
    return Promise.resolve(out.slice(0, opts.limit));
  }

  /** Its resources, permissions and history go with it (the SQL cascade). */
  delete(id: string): Promise<boolean> {
    if (!this.db.conversations.delete(id)) return Promise.resolve(false);
    for (const map of [this.db.resources, this.db.permissions] as Array<Map<string, unknown>>) {
      for (const k of [...map.keys()]) if (k.startsWith(id + '\u0000')) map.delete(k);
    }
    for (const [aid, a] of [...this.db.approvals]) if (a.conversationId === id) this.db.approvals.delete(aid);
    return Promise.resolve(true);
  }

  exists(id: string): Promise<boolean> {
    return Promise.resolve(this.db.conversations.has(id));
  }

  owner(id: string): Promise<string | null | undefined> {
    return Promise.resolve(this.db.conversations.get(id)?.owner);
  }

  ensure(id: string, owner: string): Promise<{ owner: string | null; created: boolean }> {
    if (id === RESERVED_CONVERSATION_ID) throw reservedIdError();
    const existing = this.db.conversations.get(id);
    if (existing) return Promise.resolve({ owner: existing.owner, created: false });
    const now = this.db.now();
    this.db.put(this.db.conversations, id, newConversation(owner, now));
    return Promise.resolve({ owner, created: true });
  }
}

function pick(r: ConversationRow): Pick<ConversationView, 'legacyLevel' | 'createdAt' | 'updatedAt'> {
  return { legacyLevel: r.legacyLevel, createdAt: r.createdAt, updatedAt: r.updatedAt };
}

export class MemoryDecisionStore implements DecisionStore {
  constructor(private readonly db: MemoryDb) {}

  /** The steps of DECISION_SELECT(_PREFETCH), then DECISION_CREATE for an unknown conversation. */
  load(
    conversationId: string,
    tool: string,
    createOwner: string | undefined,
    prefetch?: string,
    extras: DecisionExtras = {},
  ): Promise<DecisionContext> {
    const { waitingFor, required } = extras;
    const now = this.db.now();
    let row = this.db.conversations.get(conversationId);
    let created = false;
    const prefetched =
      row && prefetch !== undefined
        ? { name: prefetch, resource: this.db.resources.get(key(conversationId, prefetch)) ?? null }
        : undefined;
    if (!row && createOwner !== undefined) {
      if (conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
      row = newConversation(createOwner, now);
      this.db.put(this.db.conversations, conversationId, row);
      created = true;
    }
    if (!row) return Promise.resolve({ exists: false, legacyLevel: null, policy: { deny: [] }, explicitLevel: null });
    const { policy, problem } = readStoredPolicy(row.policy);
    // Only the first statement (a conversation that existed) asks; the prefetching one never does.
    const waiting =
      !created &&
      prefetch === undefined &&
      waitingFor !== undefined &&
      [...this.db.approvals.values()].some(
        (a) =>
          a.conversationId === conversationId &&
          a.kind === 'call' &&
          a.tool === tool &&
          a.action === waitingFor.action &&
          a.requestedBy === waitingFor.requestedBy &&
          a.status === 'pending' &&
          (a.expiresAt ?? Infinity) > now,
      );
    return Promise.resolve({
      exists: true,
      ...(created ? { created: true } : {}),
      owner: row.owner,
      legacyLevel: row.legacyLevel,
      policy,
      ...(problem ? { policyProblem: problem } : {}),
      explicitLevel: explicitLevelOf(this.db.permissions.get(key(conversationId, tool)), now),
      ...(prefetched ? { prefetched } : {}),
      ...(waiting ? { waiting: true } : {}),
      ...(required ? { required: this.found(conversationId, required) } : {}),
    });
  }

  /** The required column of the decision statements (src/db/decision-store.ts). */
  private found(conversationId: string, required: NonNullable<DecisionExtras['required']>): FoundResource[] {
    return required.names.flatMap((name) => {
      const r = this.db.resources.get(key(conversationId, name));
      if (!r) return [];
      return [{ name, createdBy: r.createdBy, ...(required.withData.includes(name) ? { data: r.data } : {}) }];
    });
  }
}
