/**
 * Queries over a conversation's resources (API.md, "Shared context, M6",
 * Queries): the rules every way in shares (REST, a tool's
 * `queryResources`, MCP `resources/list`). The query is checked here and
 * handed to the store as values only: the filter is a SQL/JSON path that
 * the database parses and evaluates as a bound parameter, so no text of the
 * caller's ever becomes SQL.
 *
 * Cursors are opaque to callers. Each names the sort it was made for and
 * the last row's place in it (the sort key's value and the name, which
 * breaks ties), so a page starts exactly after the previous one even when
 * many resources share an `updatedAt`, and a cursor cannot be replayed
 * under another sort. The default sort's cursor is the name alone, as the
 * list endpoint's cursors were before queries, so those stay valid.
 */
import { AppError } from './errors';
import type { ResourceListQuery, ResourceStore, Transaction } from './ports';
import { isValidId } from './resource-names';
import type { Resource, ResourcePage, ResourceQuery, ResourceSortKey } from './tool-interface';

export const QUERY_LIMIT_DEFAULT = 100;
export const QUERY_LIMIT_MAX = 500;
/**
 * The longest filter taken. A real predicate is a line or two; the bound
 * keeps a huge expression from costing the parser and planner anything.
 */
export const FILTER_MAX_LENGTH = 4096;

const SORT_KEYS: readonly ResourceSortKey[] = ['name', 'updatedAt', 'createdAt'];
/** Timestamps the database can hold, as epoch ms (up to the year 275,000 or so; Date's own range is smaller). */
const MAX_EPOCH_MS = 8.64e15;

function invalid(path: string, message: string): AppError {
  return new AppError('validation_failed', `${path}: ${message}`, [{ path, message }]);
}

/** `name`, `-updatedAt`, …: the key and the direction. */
export function parseSort(sort: unknown): ResourceListQuery['sort'] {
  if (sort === undefined) return { key: 'name', descending: false };
  const text = typeof sort === 'string' ? sort : '';
  const descending = text.startsWith('-');
  const key = (descending ? text.slice(1) : text) as ResourceSortKey;
  if (!SORT_KEYS.includes(key)) {
    throw invalid('sort', 'must be name, updatedAt or createdAt, with - first for descending');
  }
  return { key, descending };
}

function sortName(sort: ResourceListQuery['sort']): string {
  return `${sort.descending ? '-' : ''}${sort.key}`;
}

/** The cursor after `last` in `sort`. */
export function encodeCursor(sort: ResourceListQuery['sort'], last: Resource): string {
  if (sort.key === 'name' && !sort.descending) return Buffer.from(last.name, 'utf8').toString('base64url');
  const value = sort.key === 'name' ? last.name : last[sort.key];
  return Buffer.from(JSON.stringify([sortName(sort), value, last.name]), 'utf8').toString('base64url');
}

const BAD_CURSOR = 'is not one this API returned';

/** The position a cursor names, checked against the sort it is used with. */
export function decodeCursor(
  cursor: string,
  sort: ResourceListQuery['sort'],
): { value: number | string; name: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid('cursor', BAD_CURSOR);
  if (isValidId(text)) {
    // The name alone: the default sort's cursor.
    if (sort.key !== 'name' || sort.descending)
      throw invalid('cursor', `was made for sort=name, not ${sortName(sort)}`);
    return { value: text, name: text };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('cursor', BAD_CURSOR);
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) throw invalid('cursor', BAD_CURSOR);
  const [made, value, name] = parsed as unknown[];
  if (typeof made !== 'string' || !isValidId(name)) throw invalid('cursor', BAD_CURSOR);
  if (made !== sortName(sort)) throw invalid('cursor', `was made for sort=${made}, not ${sortName(sort)}`);
  const ok = sort.key === 'name' ? value === name : Number.isSafeInteger(value) && (value as number) >= 0;
  if (!ok || (typeof value === 'number' && value > MAX_EPOCH_MS)) throw invalid('cursor', BAD_CURSOR);
  return { value: value as number | string, name };
}

function checkLimit(limit: unknown): number {
  if (limit === undefined) return QUERY_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > QUERY_LIMIT_MAX) {
    throw invalid('limit', `must be an integer from 1 to ${QUERY_LIMIT_MAX}`);
  }
  return limit as number;
}

function checkFilter(filter: unknown): string | undefined {
  if (filter === undefined) return undefined;
  if (typeof filter !== 'string' || filter.trim() === '') throw invalid('filter', 'must be a non-empty SQL/JSON path');
  if (filter.length > FILTER_MAX_LENGTH) throw invalid('filter', `must be at most ${FILTER_MAX_LENGTH} characters`);
  return filter;
}

function optionalText(path: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(path, 'must be a string');
  return value;
}

function checkSince(value: unknown): Date | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_EPOCH_MS) {
    throw invalid('updatedSince', 'must be epoch milliseconds (a non-negative integer)');
  }
  return new Date(value as number);
}

/** A caller's query, checked: what the store runs (one row more than the page, to tell whether another follows). */
export function toListQuery(q: ResourceQuery): ResourceListQuery {
  const sort = parseSort(q.sort);
  const filter = checkFilter(q.filter);
  const prefix = optionalText('prefix', q.prefix);
  const createdBy = optionalText('createdBy', q.createdBy);
  const updatedBy = optionalText('updatedBy', q.updatedBy);
  const updatedSince = checkSince(q.updatedSince);
  const after = q.cursor === undefined ? undefined : decodeCursor(optionalText('cursor', q.cursor)!, sort);
  return {
    sort,
    limit: checkLimit(q.limit) + 1,
    ...(filter !== undefined ? { filter } : {}),
    ...(prefix !== undefined ? { prefix } : {}),
    ...(createdBy !== undefined ? { createdBy } : {}),
    ...(updatedBy !== undefined ? { updatedBy } : {}),
    ...(updatedSince !== undefined ? { updatedSince } : {}),
    ...(after !== undefined ? { after } : {}),
  };
}

/** One page of `q`, with the cursor of the next when there is one. */
export async function queryPage(
  store: ResourceStore,
  conversationId: string,
  q: ResourceQuery,
  tx?: Transaction,
): Promise<ResourcePage> {
  const listQuery = toListQuery(q);
  const rows = await store.query(conversationId, listQuery, tx);
  const limit = listQuery.limit - 1;
  if (rows.length <= limit) return { resources: rows, nextCursor: null };
  const page = rows.slice(0, limit);
  return { resources: page, nextCursor: encodeCursor(listQuery.sort, page[page.length - 1]!) };
}
