/** The stores of conversations, resources, decisions, permissions and keys (src/db implements them). */
import type { TPolicy } from '../policy';
import type { FoundResource } from '../tool-dependencies';
import type { Level, Resource, ResourceSortKey } from '../tool-interface';
import type { Transaction } from './units';

export interface ListResourcesOptions {
  prefix?: string;
  createdBy?: string;
  /** Exclusive cursor: a name. */
  after?: string;
  limit?: number;
}

/**
 * One page of a query (API.md, "Shared context, M6", Queries), checked by
 * src/core/resource-query.ts: the store binds every value as a parameter.
 */
export interface ResourceListQuery {
  prefix?: string;
  createdBy?: string;
  updatedBy?: string;
  /** Only resources updated at or after it. */
  updatedSince?: Date;
  /** A SQL/JSON path predicate over `data`, evaluated by the database (a bound parameter, never SQL). */
  filter?: string;
  sort: { key: ResourceSortKey; descending: boolean };
  /** Exclusive position: the previous page's last row (its sort key's value, epoch ms for times, and name). */
  after?: { value: number | string; name: string };
  limit: number;
}

/** The versions a conditional write may (`in`) and may not (`notIn`) find; absent: any. */
export interface VersionCondition {
  in?: number[];
  notIn?: number[];
}

/**
 * The expiry a write gives its resource (API.md, "Shared context, M6", TTL):
 * `ttlSeconds` from the database's now(); absent, the resource has none (a
 * previous one is cleared). The caller has checked the range (ttlSecondsOf).
 */
export interface ResourceExpiry {
  ttlSeconds?: number | undefined;
}

/** Options of a create or upsert: its expiry, and the transaction it runs in (absent: on its own). */
export interface ResourceWriteOptions extends ResourceExpiry {
  tx?: Transaction | undefined;
}

/** An update of one resource (ResourceStore.update): its new JSON text, by whom, on which versions, and its expiry. */
export interface ResourceUpdate extends ResourceExpiry {
  conversationId: string;
  name: string;
  json: string;
  by: string;
  versions?: VersionCondition | undefined;
}

/** A resource the sweeper deleted (ResourceStore.sweepExpired). */
export interface ExpiredResource {
  conversationId: string;
  name: string;
  version: number;
}

/**
 * A conversation's resources. Each method is one statement; without `tx` it
 * runs on its own (autocommit). Writes are decided by the statement itself
 * (row lock, unique key), so concurrent callers never lose an update.
 *
 * A resource past its `expiresAt` (the database's clock) is missing to every
 * method: not read, not updated, not deleted; a create replaces it as a new
 * resource (version 1). Only sweepExpired removes its row.
 */
export interface ResourceStore {
  get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined>;
  /** The same read, locking the row until `tx` ends (a read-modify-write's read). */
  getForUpdate(conversationId: string, name: string, tx: Transaction): Promise<Resource | undefined>;
  /**
   * Locks the existing resources among `names` until `tx` ends, in name order
   * (so that transactions over overlapping names wait for each other rather
   * than deadlock: src/core/resource-batch.ts), and returns them.
   */
  lockAll(conversationId: string, names: string[], tx: Transaction): Promise<Resource[]>;
  /** undefined when the name is taken. `json` is the data's JSON text. */
  create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts?: ResourceWriteOptions,
  ): Promise<Resource | undefined>;
  /**
   * Increments the version; undefined when missing, or (with `versions`) at
   * none of `versions.in` or at one of `versions.notIn`.
   */
  update(w: ResourceUpdate, tx?: Transaction): Promise<Resource | undefined>;
  /**
   * Create or replace in one statement; `created` tells which happened. With
   * `notIn`, an existing row at one of those versions is left alone: undefined.
   * With `tx`, in that transaction (negotiate's `saveAs`).
   */
  upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts?: ResourceWriteOptions & { notIn?: number[] | undefined },
  ): Promise<{ resource: Resource; created: boolean } | undefined>;
  /** false when missing or (with expectedVersions) at none of those versions. */
  delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean>;
  /** Ordered by name (bytewise). */
  list(conversationId: string, opts: ListResourcesOptions, tx?: Transaction): Promise<Resource[]>;
  /**
   * Deletes up to `limit` expired resources of any conversation in `tx`,
   * skipping rows another transaction holds (another replica's sweep, a
   * create replacing one), so replicas sweeping at once never take the same row.
   */
  sweepExpired(limit: number, tx: Transaction): Promise<ExpiredResource[]>;
  /**
   * One page of a query, ties broken by name (bytewise). A filter that does not
   * parse or fails when evaluated is an AppError `validation_failed` with the
   * database's message; one that runs past the store's time limit, `query_too_expensive`.
   * Expired resources are never returned (nor by `list`).
   */
  query(conversationId: string, q: ResourceListQuery, tx?: Transaction): Promise<Resource[]>;
}

export interface DecisionContext {
  exists: boolean;
  /** true when this load created the conversation (first use). */
  created?: boolean;
  /** The conversation's owner (null: from before identities; undefined when it does not exist). */
  owner?: string | null;
  legacyLevel: number | null;
  /** UNREADABLE_POLICY (deny everything) when the stored one does not parse; then `policyProblem` says why. */
  policy: TPolicy;
  policyProblem?: string;
  explicitLevel: number | null;
  /** With `prefetch`: the resource as read in the same statement, or null when it does not exist. */
  prefetched?: { name: string; resource: Resource | null };
  /** With `waitingFor`: true when that principal has a pending approval request for that action (any args). */
  waiting?: boolean;
  /** With `required`: those of its names that exist (data only for `withData` names). */
  required?: FoundResource[];
}

/** What else the decision's statement reads, when asked. */
export interface DecisionExtras {
  /** Whether that principal waits on a pending approval request for that action (`waiting`). */
  waitingFor?: { action: string; requestedBy: string };
  /** The resources an action's requires names (API.md, "Tool dependencies"): `required`. */
  required?: { names: string[]; withData: string[] };
}

/** What negotiate reads before it decides: one round trip for a known conversation. */
export interface DecisionStore {
  /**
   * The conversation's policy and legacy level, the tool's explicit level and
   * (`prefetch`) one resource. With `createOwner`, an unknown conversation is
   * created, owned by that subject (one more round trip, once per conversation).
   * With `extras.waitingFor`, the same statement also says whether that principal
   * waits on a pending approval request for that action (`waiting`); with
   * `extras.required`, which of those resources exist (`required`).
   */
  load(
    conversationId: string,
    tool: string,
    createOwner: string | undefined,
    prefetch?: string,
    extras?: DecisionExtras,
  ): Promise<DecisionContext>;
}

export interface LevelChange {
  tool: string;
  level: Level;
  previousLevel: Level;
}

export interface PermissionEventView {
  tool: string;
  fromLevel: number | null;
  toLevel: number;
  at: number;
  actor: string;
}

export interface StoredLevels {
  legacyLevel: number | null;
  explicit: Array<{ tool: string; level: number; upgradedAt: Date }>;
}

/**
 * One level change as the store applies it, inside the caller's transaction
 * (PermissionService.setLevel is its one caller). `set`: the tool's level
 * becomes `level`, with its history row by `actor`; the pending approval
 * requests it makes unnecessary are settled (`satisfied`, by `actor`),
 * except `settleExcept`. `expire`: a time-limited grant that is due ends,
 * the level returning to what it was before it (history row by `expiry`).
 */
export type StoredLevelSetting =
  | {
      kind: 'set';
      conversationId: string;
      tool: string;
      level: Level;
      actor: string;
      /** Created on first use, owned by this subject (absent: the conversation must exist). */
      createOwner?: string;
      /** A conversation owned by anyone else is left alone: not_found. */
      requiredOwner?: string;
      /** A grant: the level holds until then, then returns to the level before the grant. */
      until?: Date;
      /** A level at or above `level` is left alone (nothing written). */
      raiseOnly?: boolean;
      /** The approval this change decides (not settled as `satisfied`). */
      settleExcept?: string;
    }
  | { kind: 'expire'; conversationId: string; tool: string };

export interface StoredLevelChange {
  change: LevelChange;
  /** false: nothing was written (raiseOnly found the level high enough). */
  changed: boolean;
  conversationCreated: boolean;
}

export interface PermissionStore {
  /**
   * Applies `s` in `tx`: the conversation row is locked first, so the
   * changes of one conversation apply one after the other and each history
   * row records the level it really replaced. undefined: an `expire` found
   * no due grant (another replica ended it, or a level set since replaced it).
   */
  setLevel(s: StoredLevelSetting, tx: Transaction): Promise<StoredLevelChange | undefined>;
  /** Grants past their end, oldest first (read without locks: setLevel's `expire` decides). */
  dueGrants(limit: number): Promise<Array<{ conversationId: string; tool: string }>>;
  /** undefined when the conversation does not exist. */
  levels(conversationId: string): Promise<StoredLevels | undefined>;
  /** Oldest first; undefined when the conversation does not exist. */
  history(conversationId: string): Promise<PermissionEventView[] | undefined>;
}

export interface ConversationView {
  id: string;
  /** The subject that created it; null for conversations from before identities. */
  owner: string | null;
  metadata: Record<string, unknown>;
  policy: TPolicy;
  legacyLevel: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface ConversationStore {
  /** undefined when the id is taken. */
  create(
    id: string,
    metadata: Record<string, unknown>,
    policy: TPolicy,
    owner: string | null,
  ): Promise<ConversationView | undefined>;
  get(id: string): Promise<ConversationView | undefined>;
  /** Ordered by id; with `owner`, only that subject's. */
  list(opts: { owner?: string; after?: string; limit: number }): Promise<ConversationView[]>;
  /**
   * false when it did not exist. Its resources, permissions and history go
   * with it, and its agent keys are revoked, in one transaction.
   */
  delete(id: string): Promise<boolean>;
  exists(id: string): Promise<boolean>;
  /** Its owner: a subject, null (from before identities), or undefined when it does not exist. */
  owner(id: string): Promise<string | null | undefined>;
  /** Creates it (owned by `owner`) unless it exists; returns the owner it has, and whether this call created it. */
  ensure(id: string, owner: string): Promise<{ owner: string | null; created: boolean }>;
}

/** An API key as stored: never its token, only the token's hash (which is not returned). */
export interface StoredKey {
  id: string;
  role: 'admin' | 'user' | 'agent';
  subject: string;
  conversationId: string | null;
  maxLevel: number | null;
  label: string | null;
  /** Epoch milliseconds, or null for a key that does not expire. */
  expiresAt: number | null;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
}

export type NewKey = Omit<StoredKey, 'createdAt' | 'revokedAt'> & { tokenHash: string };

export interface KeyStore {
  insert(key: NewKey): Promise<StoredKey>;
  /** The key with this token hash, revoked or not. */
  findByHash(tokenHash: string): Promise<StoredKey | undefined>;
  get(id: string): Promise<(StoredKey & { conversationOwner: string | null }) | undefined>;
  /** Newest first; with `conversationOwner`, only agent keys of conversations that subject owns. */
  list(opts: { conversationOwner?: string; limit: number }): Promise<StoredKey[]>;
  /** The revoked key's token hash; undefined when there is no such key or it was already revoked. */
  revoke(id: string): Promise<string | undefined>;
  /** Token hashes of keys revoked in the last `seconds` (the database's clock). */
  revokedWithin(seconds: number): Promise<string[]>;
  /**
   * Inserts `key` (an admin key) only if no usable admin key exists, as one
   * decision across replicas; false when one existed.
   */
  insertFirstAdmin(key: NewKey): Promise<boolean>;
}
