/**
 * The ResourceStore port in SQL on the `pg` pool (or a unit of work's
 * transaction): the hot path of `negotiate`, where one round trip per
 * operation matters (docs/BENCHMARKS.md). Each write is one statement whose
 * WHERE clause or unique key decides races: the row lock serialises updates
 * (versions 2, 3, ... in commit order) and the primary key lets exactly one
 * concurrent create win.
 */
import type { ListResourcesOptions, ResourceStore, ResourceUpdate, Transaction } from '../core/ports';
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

export class SqlResourceStore implements ResourceStore {
  constructor(private readonly pool: Queryable) {}

  private on(tx: Transaction | undefined): Queryable {
    return tx ? clientOf(tx) : this.pool;
  }

  async get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_get',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2`,
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
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = $2 FOR UPDATE`,
      [conversationId, name],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  /**
   * LockRows sits above the sort in this plan: rows are locked in the order
   * returned, bytewise by name, the same for every caller.
   */
  async lockAll(conversationId: string, names: string[], tx: Transaction): Promise<Resource[]> {
    const { rows } = await prepared<ResourceRow>(
      clientOf(tx),
      'resource_lock_all',
      `SELECT ${COLUMNS} FROM resources WHERE conversation_id = $1 AND name = ANY($2::text[])
       ORDER BY name COLLATE "C" FOR UPDATE`,
      [conversationId, names],
    );
    return rows.map(toResource);
  }

  async create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    tx?: Transaction,
  ): Promise<Resource | undefined> {
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_create',
      `INSERT INTO resources (conversation_id, name, data, created_by, updated_by)
       VALUES ($1, $2, $3::jsonb, $4, $4)
       ON CONFLICT (conversation_id, name) DO NOTHING
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  async update(w: ResourceUpdate, tx?: Transaction): Promise<Resource | undefined> {
    const { conversationId, name, json, by, versions } = w;
    const { rows } = await prepared<ResourceRow>(
      this.on(tx),
      'resource_update',
      `UPDATE resources
       SET data = $3::jsonb, updated_by = $4, updated_at = now(), version = version + 1
       WHERE conversation_id = $1 AND name = $2 AND ($5::int[] IS NULL OR version = ANY($5::int[]))
         AND ($6::int[] IS NULL OR version <> ALL($6::int[]))
       RETURNING ${COLUMNS}`,
      [conversationId, name, json, by, versions?.in ?? null, versions?.notIn ?? null],
    );
    return rows[0] ? toResource(rows[0]) : undefined;
  }

  async upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts: { notIn?: number[]; tx?: Transaction } = {},
  ): Promise<{ resource: Resource; created: boolean } | undefined> {
    const { notIn, tx } = opts;
    const set = `SET data = EXCLUDED.data, updated_by = EXCLUDED.updated_by, updated_at = now(),
             version = resources.version + 1`;
    const insert = `INSERT INTO resources (conversation_id, name, data, created_by, updated_by)
       VALUES ($1, $2, $3::jsonb, $4, $4)`;
    // The plain upsert keeps its own statement: the conditional one is only If-None-Match's.
    const { rows } =
      notIn === undefined
        ? await prepared<ResourceRow & { created: boolean }>(
            this.on(tx),
            'resource_upsert',
            `${insert} ON CONFLICT (conversation_id, name) DO UPDATE ${set}
       RETURNING ${COLUMNS}, (xmax = 0) AS created`,
            [conversationId, name, json, by],
          )
        : await prepared<ResourceRow & { created: boolean }>(
            this.on(tx),
            'resource_upsert_unless',
            `${insert} ON CONFLICT (conversation_id, name) DO UPDATE ${set}
         WHERE resources.version <> ALL($5::int[])
       RETURNING ${COLUMNS}, (xmax = 0) AS created`,
            [conversationId, name, json, by, notIn],
          );
    const row = rows[0];
    return row ? { resource: toResource(row), created: row.created } : undefined;
  }

  async delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean> {
    const { rowCount } = await prepared<Record<string, unknown>>(
      this.on(tx),
      'resource_delete',
      `DELETE FROM resources
       WHERE conversation_id = $1 AND name = $2 AND ($3::int[] IS NULL OR version = ANY($3::int[]))
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
       WHERE conversation_id = $1
         AND ($2::text IS NULL OR starts_with(name, $2::text))
         AND ($3::text IS NULL OR created_by = $3::text)
         AND ($4::text IS NULL OR name COLLATE "C" > $4::text)
       ORDER BY name COLLATE "C"
       LIMIT $5`,
      [conversationId, opts.prefix ?? null, opts.createdBy ?? null, opts.after ?? null, opts.limit ?? 10000],
    );
    return rows.map(toResource);
  }
}
