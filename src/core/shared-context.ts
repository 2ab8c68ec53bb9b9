/**
 * The shared context: a conversation's named resources, as a tool sees them,
 * bound to one conversation and one tool. The rules are the resource
 * service's; the statements are its store's, each one round trip on the
 * negotiate hot path (docs/BENCHMARKS.md).
 *
 * Single statements are not enough for a tool that reads a resource and
 * writes back something computed from it: two such actions would both read
 * version n and the second write would discard the first. So inside a
 * write-level action `getResource` reads for update: the row stays locked
 * until the action's unit of work ends, and a concurrent action's read waits
 * for it and then sees the committed result. Read-level actions keep their
 * lock-free reads (and the prefetch) outside any transaction.
 */
import { AppError, TransactionAbortedError } from './errors';
import type { Transaction, UnitOfWork } from './ports';
import { queryPage } from './resource-query';
import { applyOperations, checkOperations, wroteBefore } from './resource-batch';
import type { CheckedOperation } from './transaction-operations';
import { assertResourceName, type ResourceService, ttlSecondsOf } from './resource-service';
import type {
  Resource,
  ResourcePage,
  ResourceQuery,
  SharedContext,
  TransactionOperation,
  WriteOptions,
} from './tool-interface';
import { ToolError, resourceNotFound } from './tool-interface';

export interface SharedContextOptions {
  conversationId: string;
  toolName: string;
  resources: ResourceService;
  /**
   * The action's unit of work, where a write-level action's statements run.
   * Level-1 (read) actions have none: their context refuses writes and reads
   * without locks.
   */
  unit?: UnitOfWork;
  /**
   * A read-level action's unit when it has one (a call with an
   * Idempotency-Key): its reads run there, without locks, so the call never
   * needs a second pool connection while its transaction holds one.
   */
  readUnit?: UnitOfWork;
  /** A resource already read with the permission check (a read action's declared prefetch). */
  prefetched?: { name: string; resource: Resource | null };
  /**
   * The action's `produces` schemas (tool-dependencies.ts, productCheck):
   * throws before a non-conforming write is sent, so nothing of it is written.
   */
  produces?: (name: string, data: unknown) => void;
}

/** The SharedContext a tool is given. */
export class ConversationSharedContext implements SharedContext {
  private conflict = false;
  private failedBatch: ToolError | undefined;

  constructor(private readonly o: SharedContextOptions) {}

  /**
   * true once a statement's transaction was aborted by a deadlock or
   * serialization failure: nothing of it can commit, and re-running the
   * action from the start may succeed. Recorded here rather than read from
   * the handler's error, which a tool may wrap or replace.
   */
  get conflicted(): boolean {
    return this.conflict;
  }

  /** Notes a deadlock abort; a plain rejection handler, not another async frame per statement. */
  private track<T>(statement: Promise<T>): Promise<T> {
    return statement.then(undefined, (err: unknown) => {
      if (err instanceof TransactionAbortedError) this.conflict = true;
      throw err;
    });
  }

  private async writer(): Promise<Transaction> {
    if (!this.o.unit) {
      // A read-level action writing would bypass the permission check.
      throw new Error(`Read-level action of ${this.o.toolName} attempted to write to the shared context`);
    }
    return this.o.unit.transaction();
  }

  /** Where a read-level action reads: its keyed unit's transaction, or on its own (undefined). */
  private reader(): Promise<Transaction> | undefined {
    return this.o.readUnit?.transaction();
  }

  async createResource(name: string, data: unknown, options?: WriteOptions): Promise<Resource> {
    assertResourceName(name);
    const ttlSeconds = ttlSecondsOf(options);
    this.o.produces?.(name, data);
    const json = this.o.resources.encode(data);
    const { store } = this.o.resources;
    const tx = await this.writer();
    const created = await this.track(
      store.create(this.o.conversationId, name, json, this.o.toolName, { tx, ttlSeconds }),
    );
    if (!created) throw new ToolError('resource_exists', `Resource already exists: ${name}`);
    return created;
  }

  async getResource(name: string): Promise<Resource | undefined> {
    assertResourceName(name);
    const { store } = this.o.resources;
    if (this.o.unit) {
      // A prefetched row was read unlocked, before the transaction: never use it here.
      return this.track(store.getForUpdate(this.o.conversationId, name, await this.writer()));
    }
    const early = this.o.prefetched;
    if (early && early.name === name) return early.resource ?? undefined;
    return store.get(this.o.conversationId, name, await this.reader());
  }

  /** Without `ttlSeconds` the resource keeps no expiry (a previous one is cleared), as over REST. */
  async updateResource(name: string, data: unknown, options?: WriteOptions): Promise<Resource> {
    assertResourceName(name);
    const ttlSeconds = ttlSecondsOf(options);
    this.o.produces?.(name, data);
    const json = this.o.resources.encode(data);
    const { store } = this.o.resources;
    const w = { conversationId: this.o.conversationId, name, json, by: this.o.toolName, ttlSeconds };
    const updated = await this.track(store.update(w, await this.writer()));
    if (!updated) throw resourceNotFound(name);
    return updated;
  }

  async listResources(options: { prefix?: string } = {}): Promise<Resource[]> {
    const tx = this.o.unit ? await this.o.unit.transaction() : await this.reader();
    return this.track(this.o.resources.store.list(this.o.conversationId, { prefix: options.prefix }, tx));
  }

  async deleteResource(name: string): Promise<boolean> {
    assertResourceName(name);
    return this.track(this.o.resources.store.delete(this.o.conversationId, name, undefined, await this.writer()));
  }

  /**
   * A transaction's operations in the action's unit of work (resource-batch.ts).
   * A failure after some operations wrote is kept (batchFailure): the action
   * then fails with it, so a tool that catches it cannot commit half a batch.
   */
  async transaction(operations: TransactionOperation[]): Promise<(Resource | null)[]> {
    const checked = checkOperations(operations);
    this.checkProducts(checked);
    const { resources } = this.o;
    const batch = { conversationId: this.o.conversationId, by: this.o.toolName, operations: checked };
    try {
      const tx = await this.writer();
      const applied = await this.track(
        applyOperations({ store: resources.store, encode: (d) => resources.encode(d) }, batch, tx),
      );
      return applied.results;
    } catch (err) {
      if (err instanceof ToolError && err.index !== undefined && wroteBefore(checked, err.index)) {
        this.failedBatch ??= err;
      }
      throw err;
    }
  }

  /** The action's `produces` schemas over a batch's writes, before any is sent (the failing one's index named). */
  private checkProducts(operations: readonly CheckedOperation[]): void {
    const check = this.o.produces;
    if (!check) return;
    operations.forEach((op, index) => {
      if (op.op !== 'create' && op.op !== 'update') return;
      try {
        check(op.name, op.data);
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        throw new ToolError(err.code, `operations/${index}: ${err.message}`, index);
      }
    });
  }

  /** A transaction that failed after writing part of itself: the action must not commit. */
  get batchFailure(): ToolError | undefined {
    return this.failedBatch;
  }

  /**
   * Never locks, like listResources. A query the caller got wrong (a filter
   * that does not parse or fails, one past QUERY_TIMEOUT_MS, a bad cursor) is
   * the tool's `invalid_args` with the reason; inside an action's
   * transaction the query runs in a savepoint, so the action may go on.
   */
  async queryResources(query: ResourceQuery): Promise<ResourcePage> {
    const tx = this.o.unit ? await this.o.unit.transaction() : await this.reader();
    try {
      return await this.track(queryPage(this.o.resources.store, this.o.conversationId, query ?? {}, tx));
    } catch (err) {
      if (err instanceof AppError && (err.code === 'validation_failed' || err.code === 'query_too_expensive')) {
        throw new ToolError('invalid_args', err.message);
      }
      throw err;
    }
  }
}
