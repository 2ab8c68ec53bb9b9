/**
 * The ResourceStore port in SQL on the `pg` pool (or a unit of work's
 * transaction): the hot path of `negotiate`, where one round trip per
 * operation matters (docs/BENCHMARKS.md). Each write is one statement whose
 * WHERE clause or unique key decides races: the row lock serialises updates
 * (versions 2, 3, ... in commit order) and the primary key lets exactly one
 * concurrent create win.
 *
 * Expiry (API.md, TTL) is the database's: `expires_at` is now() + ttl when
 * written and compared with now() when read, so replicas whose clocks differ
 * still agree on the instant. An expired row is missing to every statement
 * here (LIVE) until sweepExpired deletes it, except a create, which replaces
 * it in place as a new resource (version 1).
 */
import type {
  ExpiredResource,
  ListResourcesOptions,
  ResourceListQuery,
  ResourceStore,
  ResourceUpdate,
  ResourceWriteOptions,
  Transaction,
} from '../core/ports';
import type { Resource } from '../core/tool-interface';
import { clientOf, prepared, type Queryable } from './sql';

export interface ResourceRow {
  name: string;
  data: unknown;
  created_by: string;
  updated_by: string;
  created_at: Date;
  updated_at: Date;
  version: number;
  /** Absent from rows read before TTL (events recorded then); null when it never expires. */
  expires_at?: Date | null;
}

const COLUMNS = 'name, data, created_by, updated_by, created_at, updated_at, version, expires_at';

/** The row has not expired (the resources table's own columns, unqualified). */
export const LIVE = '(expires_at IS NULL OR expires_at > now())';

/** The expiry a write sets: now() + $N seconds, or none (NULL) when $N is null. */
const expiryOf = (param: number): string => `now() + $${param}::int * interval '1 second'`;

/** ResourceStore.query's SQL (src/db/resource-query.ts), given to the store so the two files need not import each other. */
export type ResourceQueries = Pick<ResourceStore, 'query'>;

export function toResource(row: ResourceRow): Resource {
  const resource: Resource = {
    name: row.name,
    data: row.data,
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    version: row.version,
  };
  if (row.expires_at) resource.expiresAt = row.expires_at.getTime();
  return resource;
}

/** A new resource's row; $5 is ttlSeconds (null: no expiry). */
const INSERT = `INSERT INTO resources (conversation_id, name, data, created_by, updated_by, expires_at)
       VALUES ($1, $2, $3::jsonb, $4, $4, ${expiryOf(5)})`;

/** An expired row replaced by a new resource (ON CONFLICT ... DO UPDATE), as if it had been swept first. */
const REPLACE_EXPIRED = `data = EXCLUDED.data, created_by = EXCLUDED.created_by, updated_by = EXCLUDED.updated_by,
         created_at = now(), updated_at = now(), version = 1, expires_at = EXCLUDED.expires_at`;

/** An upsert's change of an existing row: an update of a live one, a new resource over an expired one. */
const UPSERT_SET = `data = EXCLUDED.data, updated_by = EXCLUDED.updated_by, updated_at = now(),
         expires_at = EXCLUDED.expires_at,
         version = CASE WHEN resources.expires_at <= now() THEN 1 ELSE resources.version + 1 END,
         created_by = CASE WHEN resources.expires_at <= now() THEN EXCLUDED.created_by ELSE resources.created_by END,
         created_at = CASE WHEN resources.expires_at <= now() THEN now() ELSE resources.created_at END`;

export class SqlResourceStore implements ResourceStore {
  constructor(
    private readonly pool: Queryable,
    private readonly queries: ResourceQueries,
  ) {}

  private on(tx: Transaction | undefined): Queryable {
    return tx ? clientOf(tx) : this.pool;
  }

  async get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_get',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2 AND ${LIVE}`,
      [conversationId, name],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  /**
   * Under READ COMMITTED a read that waited on the lock returns the row as
   * the other transaction committed it (or nothing if it was deleted).
   */
  async getForUpdate(conversationId: string, name: string, tx: Transaction): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      clientOf(tx),
      'resource_get_for_update',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2 AND ${LIVE} FOR UPDATE`,
      [conversationId, name],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  /**
   * LockRows sits above the sort in this plan: rows are locked in the order
   * returned, bytewise by name, the same for every caller. Expired rows are
   * locked too (a create in the batch replaces them) but not returned.
   */
  async lockAll(conversationId: string, names: string[], tx: Transaction): Promise<Resource[]> {
    const { rows } = await prepared<ResourceRow & { live: boolean }>(
      clientOf(tx),
      'resource_lock_all',
      `SELECT ${COLUMNS}, ${LIVE} AS live FROM resources WHERE conversation_id = $1 AND name = ANY($2::text[])
       ORDER BY name COLLATE "C" FOR UPDATE`,
      [conversationId, names],
    );
    return rows.filter((row) => row.live).map(toResource);
  }

  async create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts: ResourceWriteOptions = {},
  ): Promise<Resource | undefined> {
    // A row that expired but is not swept yet is taken over: the new resource starts from version 1.
    // DO UPDATE (unlike DO NOTHING) locks the row it finds, live or not, until the transaction ends:
    // a create that finds a live one waits for its writer and then answers `exists` as before.
    const { rows } = await prepared<ResourceRow>(
      this.on(opts.tx),
      'resource_create',
      `${INSERT} ON CONFLICT (conversation_id, name) DO UPDATE SET ${REPLACE_EXPIRED}
       WHERE resources.expires_at <= now()
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by, opts.ttlSeconds ?? null],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  async update(w: ResourceUpdate, tx?: Transaction): Promise<Resource | undefined> {
    const { conversationId, name, json, by, versions } = w;
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_update',
      `UPDATE resources
       SET data = $3::jsonb, updated_by = $4, updated_at = now(), version = version + 1, expires_at = ${expiryOf(7)}
       WHERE conversation_id = $1 AND name = $2 AND ${LIVE} AND ($5::int[] IS NULL OR version = ANY($5::int[]))
         AND ($6::int[] IS NULL OR version <> ALL($6::int[]))
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by, versions?.in ?? null, versions?.notIn ?? null, w.ttlSeconds ?? null],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  async upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts: ResourceWriteOptions & { notIn?: number[] | undefined } = {},
  ): Promise<{ resource: Resource; created: boolean } | undefined> {
    const { notIn, tx } = opts;
    const values = [conversationId, name, json, by, opts.ttlSeconds ?? null];
    // Version 1 is only ever a new resource's: a fresh insert, or one over an expired row (UPSERT_SET).
    // The plain upsert keeps its own statement: the conditional one is only If-None-Match's.
    const { rows } =
      notIn === undefined
        ? await prepared<ResourceRow & { created: boolean }>(
            this.on(tx),
            'resource_upsert',
            `${INSERT} ON CONFLICT (conversation_id, name) DO UPDATE SET ${UPSERT_SET}
       RETURNING ${COLUMNS}, (version = 1) AS created`,
            values,
          )
        : await prepared<ResourceRow & { created: boolean }>(
            this.on(tx),
            'resource_upsert_unless',
            `${INSERT} ON CONFLICT (conversation_id, name) DO UPDATE SET ${UPSERT_SET}
         WHERE resources.expires_at <= now() OR resources.version <> ALL($6::int[])
       RETURNING ${COLUMNS}, (version = 1) AS created`,
            [...values, notIn],
          );
    const row = rows[0];
    return row ? { resource: toResource(row), created: row.created } : undefined;
  }

  async delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean> {
    const { rowCount } = await prepared<Record<string, unknown>>(
      this.on(tx),
      'resource_delete',
      `DELETE FROM resources
       WHERE conversation_id = $1 AND name = $2 AND ${LIVE} AND ($3::int[] IS NULL OR version = ANY($3::int[]))
       RETURNING name`,
      [conversationId, name, expectedVersions ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  async list(conversationId: string, opts: ListResourcesOptions, tx?: Transaction): Promise<Resource[]> {
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_list',
      `SELECT ${COLUMNS} FROM resources
       WHERE conversation_id = $1 AND ${LIVE}
         AND ($2::text IS NULL OR starts_with(name, $2::text))
         AND ($3::text IS NULL OR created_by = $3::text)
         AND ($4::text IS NULL OR name COLLATE "C" > $4::text)
       ORDER BY name COLLATE "C"
       LIMIT $5`,
      [conversationId, opts.prefix ?? null, opts.createdBy ?? null, opts.after ?? null, opts.limit ?? 10000],
    );
    return rows.map(toResource);
  }

  async sweepExpired(limit: number, tx: Transaction): Promise<ExpiredResource[]> {
    // Oldest expiry first, on the partial index; SKIP LOCKED leaves another sweeper's rows (and a
    // create replacing one) alone. The trigger records each as resource.expired (it had expired).
    const { rows } = await prepared<{ conversation_id: string; name: string; version: number }>(
      clientOf(tx),
      'resource_sweep_expired',
      `WITH due AS (
         SELECT conversation_id, name FROM resources
         WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       DELETE FROM resources r USING due
       WHERE r.conversation_id = due.conversation_id AND r.name = due.name
       RETURNING r.conversation_id, r.name, r.version`,
      [limit],
    );
    return rows.map((r) => ({ conversationId: r.conversation_id, name: r.name, version: r.version }));
  }

  query(conversationId: string, q: ResourceListQuery, tx?: Transaction): Promise<Resource[]> {
    return this.queries.query(conversationId, q, tx);
  }
}
