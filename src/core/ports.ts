/**
 * What the domain needs from storage, declared here and implemented in
 * src/db. The domain never sees a driver: a transaction is an opaque handle
 * that only the adapter that made it can use.
 */
import type { TPolicy } from './policy';
import type { Level, Resource } from './tool-interface';

declare const transactionBrand: unique symbol;
/** An open transaction of a unit of work; statements given it run inside it. */
export type Transaction = { readonly [transactionBrand]: true };

export interface ListResourcesOptions {
  prefix?: string;
  createdBy?: string;
  /** Exclusive cursor: a name. */
  after?: string;
  limit?: number;
}

/**
 * A conversation's resources. Each method is one statement; without `tx` it
 * runs on its own (autocommit). Writes are decided by the statement itself
 * (row lock, unique key), so concurrent callers never lose an update.
 */
export interface ResourceStore {
  get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined>;
  /** The same read, locking the row until `tx` ends (a read-modify-write's read). */
  getForUpdate(conversationId: string, name: string, tx: Transaction): Promise<Resource | undefined>;
  /** undefined when the name is taken. `json` is the data's JSON text. */
  create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    tx?: Transaction,
  ): Promise<Resource | undefined>;
  /** Increments the version; undefined when missing or (with expectedVersions) at none of those versions. */
  update(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    expectedVersions?: number[],
    tx?: Transaction,
  ): Promise<Resource | undefined>;
  /** Create or replace in one statement; `created` tells which happened. */
  upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
  ): Promise<{ resource: Resource; created: boolean }>;
  /** false when missing or (with expectedVersions) at none of those versions. */
  delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean>;
  /** Ordered by name (bytewise). */
  list(conversationId: string, opts: ListResourcesOptions, tx?: Transaction): Promise<Resource[]>;
}

export interface DecisionContext {
  exists: boolean;
  legacyLevel: number | null;
  /** UNREADABLE_POLICY (deny everything) when the stored one does not parse; then `policyProblem` says why. */
  policy: TPolicy;
  policyProblem?: string;
  explicitLevel: number | null;
  /** With `prefetch`: the resource as read in the same statement, or null when it does not exist. */
  prefetched?: { name: string; resource: Resource | null };
}

/** What negotiate reads before it decides: one round trip for a known conversation. */
export interface DecisionStore {
  /**
   * The conversation's policy and legacy level, the tool's explicit level and
   * (`prefetch`) one resource. With `create`, an unknown conversation is
   * created (one more round trip, once per conversation).
   */
  load(conversationId: string, tool: string, create: boolean, prefetch?: string): Promise<DecisionContext>;
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

export interface PermissionStore {
  /**
   * Sets the tool's level and appends the history row in one transaction,
   * creating the conversation on first use; concurrent changes of one
   * conversation apply one after the other.
   */
  setLevel(conversationId: string, tool: string, level: Level, actor: string): Promise<LevelChange>;
  /** undefined when the conversation does not exist. */
  levels(conversationId: string): Promise<StoredLevels | undefined>;
  /** Oldest first; undefined when the conversation does not exist. */
  history(conversationId: string): Promise<PermissionEventView[] | undefined>;
}

export interface ConversationView {
  id: string;
  metadata: Record<string, unknown>;
  policy: TPolicy;
  legacyLevel: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface ConversationStore {
  /** undefined when the id is taken. */
  create(id: string, metadata: Record<string, unknown>, policy: TPolicy): Promise<ConversationView | undefined>;
  get(id: string): Promise<ConversationView | undefined>;
  /** false when it did not exist. Its resources, permissions and history go with it. */
  delete(id: string): Promise<boolean>;
  exists(id: string): Promise<boolean>;
  /** Creates it unless it exists. */
  ensure(id: string): Promise<void>;
}

/**
 * One action's writes: a transaction begun on the first statement that
 * needs it (an action that writes nothing costs no BEGIN/COMMIT), then
 * committed, rolled back or abandoned. Once ended it begins no more.
 */
export interface UnitOfWork {
  transaction(): Promise<Transaction>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /**
   * After a timeout, when the handler may still use the transaction: its
   * connection is destroyed, which also rolls it back.
   */
  abandon(): Promise<void>;
}

export interface UnitsOfWork {
  /** A new unit of work; nothing happens until its first statement. */
  start(): UnitOfWork;
}

/** Every port, as src/db implements them for one database. */
export interface Stores {
  resources: ResourceStore;
  decisions: DecisionStore;
  permissions: PermissionStore;
  conversations: ConversationStore;
  units: UnitsOfWork;
}
