/**
 * The listing SQL of resources (ResourceStore.list and .query), and the only
 * place a caller's filter reaches the database: as the bound parameter of
 * `data @@ $n::jsonpath`, which Postgres parses as a SQL/JSON path (never as
 * SQL). Everything else in a statement is picked from the fixed fragments
 * below by the (checked) sort key.
 *
 * Indexes (migration 20260701000100_resource_query): `(conversation_id, name
 * COLLATE "C")` and one per time key serve each sort in order, so a page reads
 * its rows and stops; a GIN index over `data` (jsonb_path_ops) finds the rows
 * an equality filter matches without reading the others. The planner picks
 * between the two per query, which is why a filtered query is never a named
 * statement: planned with the filter's own value, not a generic plan. (Its
 * statistics are the table's: docs/BENCHMARKS.md §13 has the one case that
 * misleads it, and why a conversation_id key in the GIN index, btree_gin,
 * would not help: it is not used, so no extension is needed.)
 *
 * A filtered query runs in a short transaction (or, inside an action's, a
 * savepoint) with `SET LOCAL statement_timeout`: a regex that backtracks, or
 * a predicate over a whole large conversation, is cancelled at
 * QUERY_TIMEOUT_MS. The plain listing needs no such bound and keeps its one
 * round trip.
 */
import { AppError } from '../core/errors';
import type { ResourceListQuery, Transaction } from '../core/ports';
import type { Resource } from '../core/tool-interface';
import { driverErrorChain } from './database';
import { LIVE, type ResourceQueries, type ResourceRow, toResource } from './resource-store';
import { type Queryable, clientOf, prepared, translateError } from './sql';
import type { Pool, PoolClient } from 'pg';

const COLUMNS = 'name, data, created_by, updated_by, created_at, updated_at, version, expires_at';

/** The column of each sort key: constants, never caller text. */
const SORT_COLUMN = { name: null, updatedAt: 'updated_at', createdAt: 'created_at' } as const;

/** The statement of one query, and its values ($1, $2, … in order). */
export function querySql(conversationId: string, q: ResourceListQuery): { text: string; values: unknown[] } {
  const values: unknown[] = [conversationId];
  const bind = (value: unknown, type: string): string => {
    values.push(value);
    return `$${values.length}::${type}`;
  };
  const where = ['conversation_id = $1', LIVE];
  if (q.prefix !== undefined) where.push(`starts_with(name, ${bind(q.prefix, 'text')})`);
  if (q.createdBy !== undefined) where.push(`created_by = ${bind(q.createdBy, 'text')}`);
  if (q.updatedBy !== undefined) where.push(`updated_by = ${bind(q.updatedBy, 'text')}`);
  if (q.updatedSince !== undefined) where.push(`updated_at >= ${bind(q.updatedSince, 'timestamptz')}`);
  if (q.filter !== undefined) {
    const path = bind(q.filter, 'jsonpath');
    where.push(`data @@ ${path}`);
    // The filter once over `{}`, whatever the rows: an unknown variable fails even where no row is
    // read (an empty conversation, no index match). Always true otherwise, and evaluated once: at
    // planning (the values are known then), or as a one-time filter.
    where.push(`('{}'::jsonb @@ ${path}) IS NOT DISTINCT FROM ('{}'::jsonb @@ ${path})`);
  }
  const column = SORT_COLUMN[q.sort.key];
  const dir = q.sort.descending ? 'DESC' : 'ASC';
  const after = q.sort.descending ? '<' : '>';
  if (q.after) {
    const name = bind(q.after.name, 'text');
    if (column === null) where.push(`name COLLATE "C" ${after} ${name}`);
    else
      where.push(`(${column}, name COLLATE "C") ${after} (${bind(new Date(q.after.value), 'timestamptz')}, ${name})`);
  }
  const order = column === null ? `name COLLATE "C" ${dir}` : `${column} ${dir}, name COLLATE "C" ${dir}`;
  const text = `SELECT ${COLUMNS} FROM resources WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${bind(q.limit, 'int')}`;
  return { text, values };
}

/** The name of an unfiltered query's prepared statement: one per shape (its text depends on nothing else). */
function statementName(q: ResourceListQuery): string {
  const parts = [q.sort.key, q.sort.descending ? 'd' : 'a'];
  for (const [flag, present] of [
    ['p', q.prefix],
    ['c', q.createdBy],
    ['u', q.updatedBy],
    ['s', q.updatedSince],
    ['k', q.after],
  ] as const) {
    if (present !== undefined) parts.push(flag);
  }
  return `resource_query_${parts.join('_')}`;
}

/** SQLSTATEs that mean the filter itself is wrong (it is the statement's only input of the kind). */
function isFilterError(code: string): boolean {
  if (code === '22021' || code === '22P05') return false; // NUL or a bad byte: translateError says so for any value
  return (
    code.startsWith('22') || // data exceptions: jsonpath input and evaluation, invalid regular expressions
    code === '42601' || // syntax error (jsonpath input)
    code === '42704' || // undefined object: an unknown jsonpath variable
    code === '54001' || // stack depth: a deeply nested expression
    code === '54000' // program limit: a regular expression too complex
  );
}

/** The domain's error for a filtered query's failure: the database's own message for the caller's filter. */
function filterError(err: unknown, timeoutMs: number): unknown {
  if (err instanceof AppError) return err;
  for (const e of driverErrorChain(err)) {
    const rec = e as { code?: unknown; message?: unknown; detail?: unknown };
    if (typeof rec.code !== 'string') continue;
    if (rec.code === '57014') {
      return new AppError(
        'query_too_expensive',
        `The query ran past QUERY_TIMEOUT_MS (${timeoutMs} ms); narrow the filter or add prefix, createdBy, updatedBy or updatedSince`,
        undefined,
        { cause: err },
      );
    }
    if (isFilterError(rec.code) && typeof rec.message === 'string') {
      const message = typeof rec.detail === 'string' ? `${rec.message} (${rec.detail})` : rec.message;
      return new AppError('validation_failed', `filter: ${message}`, [{ path: 'filter', message }], { cause: err });
    }
  }
  return translateError(err);
}

/**
 * Whether a jsonpath, in Postgres's own printed form (`$1::jsonpath::text`:
 * every string a JSON string, a backslash always `\\`), has a `like_regex`
 * pattern with a back reference (`\1` … `\9`): the one construct that makes
 * Postgres's regex engine take exponential time.
 */
export function hasBackReference(printed: string): boolean {
  let previousWord = '';
  for (let i = 0; i < printed.length; i++) {
    const ch = printed[i]!;
    if (ch === '"') {
      let end = i + 1;
      while (end < printed.length && printed[end] !== '"') end += printed[end] === '\\' ? 2 : 1;
      const literal = printed.slice(i, end + 1);
      if (previousWord === 'like_regex' && /\\[1-9]/.test(unescapeRegex(literal))) return true;
      previousWord = '';
      i = end;
    } else if (/[A-Za-z_]/.test(ch)) {
      const word = /^[A-Za-z_]+/.exec(printed.slice(i))![0];
      previousWord = word;
      i += word.length - 1;
    } else if (!/\s/.test(ch)) {
      previousWord = '';
    }
  }
  return false;
}

/** A JSON string literal's text, with `\\\\` (an escaped backslash) kept apart from a back reference. */
function unescapeRegex(literal: string): string {
  let text: string;
  try {
    text = JSON.parse(literal) as string;
  } catch {
    return '\\1'; // unreadable: treated as the worst case
  }
  // An escaped backslash in the regex (`\\\\`) is a literal backslash, not the start of a back reference.
  return text.replace(/\\\\/g, '');
}

export class SqlResourceQueries implements ResourceQueries {
  constructor(
    private readonly pool: Pool,
    private readonly timeoutMs: number,
    /**
     * The embedded PGlite database: it runs in this process's thread and
     * cannot cancel a statement (statement_timeout never fires there), so a
     * pattern that could run for minutes is refused before it is sent.
     */
    private readonly embedded = false,
  ) {}

  /** ResourceStore.query: see the file's comment. */
  async query(conversationId: string, q: ResourceListQuery, tx?: Transaction): Promise<Resource[]> {
    const { text, values } = querySql(conversationId, q);
    if (q.filter === undefined) {
      const { rows } = await prepared<ResourceRow>(tx ? clientOf(tx) : this.pool, statementName(q), text, values);
      return rows.map(toResource);
    }
    try {
      const rows = await this.bounded(tx, async (db) => {
        if (this.embedded) await this.refuseUninterruptible(db, q.filter!);
        return db.query<ResourceRow>(text, values);
      });
      return rows.rows.map(toResource);
    } catch (err) {
      throw filterError(err, this.timeoutMs);
    }
  }

  /** On the embedded database: query_too_expensive for a back reference (see `embedded`). */
  private async refuseUninterruptible(db: Queryable, filter: string): Promise<void> {
    const { rows } = await db.query<{ printed: string }>('SELECT $1::jsonpath::text AS printed', [filter]);
    if (rows[0] && hasBackReference(rows[0].printed)) {
      throw new AppError(
        'query_too_expensive',
        'filter: a like_regex pattern with a back reference (\\1 to \\9) can run for minutes, and the embedded database cannot stop a statement; use a server (DATABASE_URL) or a pattern without one',
        [{ path: 'filter', message: 'like_regex back references are refused on the embedded database' }],
      );
    }
  }

  /**
   * `run` under statement_timeout: on a connection of its own in a read-only
   * transaction, or inside `tx` in a savepoint that is rolled back after, so
   * the action's transaction keeps its own timeout and survives a failing filter.
   */
  private async bounded<T>(tx: Transaction | undefined, run: (db: Queryable) => Promise<T>): Promise<T> {
    const limit = `SET LOCAL statement_timeout = ${Math.trunc(this.timeoutMs)}`;
    if (tx) {
      const db = clientOf(tx);
      await db.query(`SAVEPOINT resource_query; ${limit}`);
      try {
        return await run(db);
      } finally {
        await db.query('ROLLBACK TO SAVEPOINT resource_query; RELEASE SAVEPOINT resource_query');
      }
    }
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translateError(err);
    }
    let broken: Error | undefined;
    try {
      await client.query(`BEGIN READ ONLY; ${limit}`);
      const result = await run(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((rollbackErr: Error) => {
        broken = rollbackErr;
      });
      throw err;
    } finally {
      // A connection whose rollback failed is closed, not given back for reuse.
      client.release(broken);
    }
  }
}
