/**
 * The shared context: a conversation's named resources, in Postgres.
 *
 * Statements are plain SQL on the `pg` pool (or on the transaction's client):
 * these are the hot path of `negotiate`, where one round trip per operation
 * matters (see docs/BENCHMARKS.md). Each write is one statement whose WHERE
 * clause or unique key decides races, so concurrent callers never lose an
 * update: the row lock serialises updates (versions 2, 3, ... in commit
 * order) and the primary key lets exactly one concurrent create win.
 *
 * Single statements are not enough for a tool that reads a resource and
 * writes back something computed from it: two such actions would both read
 * version n and the second write would discard the first. So inside a
 * write-level action `getResource` reads with `FOR UPDATE`: the row stays
 * locked until the action's transaction ends, and a concurrent action's read
 * waits for it and then sees the committed result. Read-level actions keep
 * their lock-free reads (and the prefetch) on the pool.
 */
import type { Resource, SharedContext } from './tool-interface';
import { ToolError } from './tool-interface';
import { ID_RULE, isValidId } from './resource-names';

/** A pool or a client inside a transaction. */
export interface Queryable {
  query<R extends object = Record<string, unknown>>(
    query: string | { name?: string; text: string; values?: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}

/**
 * A named (prepared) statement: Postgres parses and plans it once per
 * connection instead of on every call, which matters on the negotiate path.
 */
export function prepared<R extends object>(
  db: Queryable,
  name: string,
  text: string,
  values: unknown[],
): Promise<{ rows: R[]; rowCount: number | null }> {
  return db.query<R>({ name, text, values });
}

export interface ResourceRow {
  name: string;
  data: unknown;
  created_by: string;
  updated_by: string;
  created_at: Date;
  updated_at: Date;
  version: number;
}

const COLUMNS = 'name, data, created_by, updated_by, created_at, updated_at, version';

export function toResource(row: ResourceRow): Resource {
  return {
    name: row.name,
    data: row.data,
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    version: row.version,
  };
}

export class ResourceTooLargeError extends ToolError {
  constructor(bytes: number, max: number) {
    super('resource_too_large', `Resource data is ${bytes} bytes; the limit is ${max} bytes (RESOURCE_MAX_BYTES)`);
  }
}

/** Serialises data for storage, enforcing the size limit on the JSON text. */
export function encodeData(data: unknown, maxBytes: number): string {
  if (data === undefined) throw new ToolError('invalid_args', 'data: Required');
  const text = JSON.stringify(data);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw new ResourceTooLargeError(bytes, maxBytes);
  return text;
}

export function assertResourceName(name: unknown): asserts name is string {
  if (!isValidId(name)) {
    throw new ToolError('invalid_args', `name: ${ID_RULE}`);
  }
}

export function notFound(name: string): ToolError {
  return new ToolError('resource_not_found', `Resource not found: ${name}`);
}

/** The resource statements, each one round trip. */
export const resourceSql = {
  async get(db: Queryable, conversationId: string, name: string): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      db,
      'resource_get',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2`,
      [conversationId, name],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  },

  /**
   * The same read inside a transaction, locking the row until it ends. Under
   * READ COMMITTED a read that waited on the lock returns the row as the
   * other transaction committed it (or nothing if it was deleted).
   */
  async getForUpdate(db: Queryable, conversationId: string, name: string): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      db,
      'resource_get_for_update',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2 FOR UPDATE`,
      [conversationId, name],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  },

  /** undefined when the name is taken. */
  async create(
    db: Queryable,
    conversationId: string,
    name: string,
    json: string,
    by: string,
  ): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      db,
      'resource_create',
      `INSERT INTO resources (conversation_id, name, data, created_by, updated_by)
       VALUES ($1, $2, $3::jsonb, $4, $4)
       ON CONFLICT (conversation_id, name) DO NOTHING
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  },

  /** undefined when missing (or, with expectedVersions, when the version is none of them). */
  async update(
    db: Queryable,
    conversationId: string,
    name: string,
    json: string,
    by: string,
    expectedVersions?: number[],
  ): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      db,
      'resource_update',
      `UPDATE resources
       SET data = $3::jsonb, updated_by = $4, updated_at = now(), version = version + 1
       WHERE conversation_id = $1 AND name = $2 AND ($5::int[] IS NULL OR version = ANY($5::int[]))
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by, expectedVersions ?? null],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  },

  /** Create or replace in one statement; `created` tells which happened. */
  async upsert(
    db: Queryable,
    conversationId: string,
    name: string,
    json: string,
    by: string,
  ): Promise<{ resource: Resource; created: boolean }> {
    const { rows } = await prepared<ResourceRow & { created: boolean }>(
      db,
      'resource_upsert',
      `INSERT INTO resources (conversation_id, name, data, created_by, updated_by)
       VALUES ($1, $2, $3::jsonb, $4, $4)
       ON CONFLICT (conversation_id, name) DO UPDATE
         SET data = EXCLUDED.data, updated_by = EXCLUDED.updated_by, updated_at = now(),
             version = resources.version + 1
       RETURNING ${COLUMNS}, (xmax = 0) AS created`,
      [conversationId, name, json, by],
    );
    const row = rows[0]!;
    return { resource: toResource(row), created: row.created };
  },

  /** false when missing (or, with expectedVersions, when the version is none of them). */
  async delete(db: Queryable, conversationId: string, name: string, expectedVersions?: number[]): Promise<boolean> {
    const { rowCount } = await prepared<Record<string, unknown>>(
      db,
      'resource_delete',
      `DELETE FROM resources
       WHERE conversation_id = $1 AND name = $2 AND ($3::int[] IS NULL OR version = ANY($3::int[]))`,
      [conversationId, name, expectedVersions ?? null],
    );
    return (rowCount ?? 0) > 0;
  },

  /** Ordered by name; `after` is an exclusive cursor (a name). */
  async list(
    db: Queryable,
    conversationId: string,
    opts: { prefix?: string; createdBy?: string; after?: string; limit?: number },
  ): Promise<Resource[]> {
    const { rows } = await prepared<ResourceRow>(
      db,
      'resource_list',
      `SELECT ${COLUMNS} FROM resources
       WHERE conversation_id = $1
         AND ($2::text IS NULL OR starts_with(name, $2::text))
         AND ($3::text IS NULL OR created_by = $3::text)
         AND ($4::text IS NULL OR name COLLATE "C" > $4::text)
       ORDER BY name COLLATE "C"
       LIMIT $5`,
      [conversationId, opts.prefix ?? null, opts.createdBy ?? null, opts.after ?? null, opts.limit ?? 10000],
    );
    return rows.map(toResource);
  },
};

export interface SharedContextOptions {
  conversationId: string;
  toolName: string;
  maxBytes: number;
  /** Where statements run: the pool for reads, the action's transaction for writes. */
  db: () => Promise<Queryable>;
  /**
   * Level-1 (read) actions get a context that refuses writes and reads
   * without locks; any other action's reads lock what they read (FOR UPDATE).
   */
  readOnly: boolean;
  /** A resource already read with the permission check (a read action's declared prefetch). */
  prefetched?: { name: string; resource: Resource | null };
}

/** Deadlock detected, serialization failure: the whole action may be run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

function sqlState(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/** The SharedContext a tool is given: bound to one conversation and one tool. */
export class SqlSharedContext implements SharedContext {
  private conflict = false;

  constructor(private readonly o: SharedContextOptions) {}

  /**
   * true once a statement failed with a deadlock or serialization failure:
   * the transaction is aborted (nothing of it can commit) and re-running the
   * action from the start may succeed. Recorded here rather than read from
   * the handler's error, which a tool may wrap or replace.
   */
  get conflicted(): boolean {
    return this.conflict;
  }

  private async track<T>(statement: Promise<T>): Promise<T> {
    try {
      return await statement;
    } catch (err) {
      if (RETRYABLE_SQLSTATES.has(sqlState(err) as string)) this.conflict = true;
      throw err;
    }
  }

  private async writer(): Promise<Queryable> {
    if (this.o.readOnly) {
      // A read-level action writing would bypass the permission check.
      throw new Error(`Read-level action of ${this.o.toolName} attempted to write to the shared context`);
    }
    return this.o.db();
  }

  async createResource(name: string, data: unknown): Promise<Resource> {
    assertResourceName(name);
    const json = encodeData(data, this.o.maxBytes);
    const created = await this.track(
      resourceSql.create(await this.writer(), this.o.conversationId, name, json, this.o.toolName),
    );
    if (!created) throw new ToolError('resource_exists', `Resource already exists: ${name}`);
    return created;
  }

  async getResource(name: string): Promise<Resource | undefined> {
    assertResourceName(name);
    if (!this.o.readOnly) {
      // A prefetched row was read unlocked, before the transaction: never use it here.
      return this.track(resourceSql.getForUpdate(await this.writer(), this.o.conversationId, name));
    }
    const early = this.o.prefetched;
    if (early && early.name === name) return early.resource ?? undefined;
    return resourceSql.get(await this.o.db(), this.o.conversationId, name);
  }

  async updateResource(name: string, data: unknown): Promise<Resource> {
    assertResourceName(name);
    const json = encodeData(data, this.o.maxBytes);
    const updated = await this.track(
      resourceSql.update(await this.writer(), this.o.conversationId, name, json, this.o.toolName),
    );
    if (!updated) throw notFound(name);
    return updated;
  }

  async listResources(options: { prefix?: string } = {}): Promise<Resource[]> {
    return this.track(resourceSql.list(await this.o.db(), this.o.conversationId, { prefix: options.prefix }));
  }

  async deleteResource(name: string): Promise<boolean> {
    assertResourceName(name);
    return this.track(resourceSql.delete(await this.writer(), this.o.conversationId, name));
  }
}
