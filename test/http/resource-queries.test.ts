/**
 * Queries over the shared context (API.md, "Shared context, M6", Queries):
 * `GET …/resources?filter=&sort=&updatedBy=&updatedSince=…` on a real
 * Postgres, the same through a TOOLS_DIR tool's `ctx.sharedContext.queryResources`
 * and the analytics tool, MCP `resources/list`, and hostile filters, which
 * must all be 4xx with nothing leaked and nothing changed.
 */
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type supertest from 'supertest';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { bearer, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { toolsDirWith } from '../support/isolation-tools';
import { type TestApp, createTestApp } from '../support/test-app';

type Body = Record<string, unknown>;
interface Row {
  name: string;
  data: Record<string, unknown>;
  createdBy: string;
  updatedBy: string;
  createdAt: number;
  updatedAt: number;
}

const QUERY_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'query-tool', version: '1.0.0', description: 'Queries the shared context from a worker',
  actions: {
    'query': defineAction({ description: 'One page of a query', level: 1,
      input: z.object({ query: z.record(z.string(), z.unknown()) }),
      handler: async ({ query }, ctx) => ctx.sharedContext.queryResources(query) }),
    'query-then-write': defineAction({ description: 'A query that may fail, then a write in the same action', level: 2,
      input: z.object({ filter: z.string(), name: z.string() }),
      handler: async ({ filter, name }, ctx) => {
        let failure = null;
        try { await ctx.sharedContext.queryResources({ filter }); } catch (err) { failure = err.code; }
        await ctx.sharedContext.createResource(name, { after: failure });
        return { failure };
      } }),
  },
});`;

/** A string the backtracking of `^(.*)(.*)(.*)(.*)\4\3\2\1$` takes minutes over (measured: 101 chars took 3 s). */
const SLOW_TEXT = 'a'.repeat(401);
const SLOW_FILTER = String.raw`$.s like_regex "^(.*)(.*)(.*)(.*)\\4\\3\\2\\1$"`;
const QUERY_TIMEOUT_MS = 300;

let t: TestApp;
let toolsDir: string;
beforeAll(async () => {
  toolsDir = toolsDirWith({ 'query-tool.js': QUERY_TOOL });
  t = await createTestApp(
    { QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), TOOLS_DIR: toolsDir },
    { registry: { loadTimeoutMs: 10000 } },
  );
});
afterAll(async () => {
  await t?.close();
  if (toolsDir) rmSync(toolsDir, { recursive: true, force: true });
});

function list(conversationId: string, query: Record<string, string>): supertest.Test {
  return request(t.app).get(`/conversations/${conversationId}/resources`).query(query);
}

function neg(conversationId: string, action: string, args: Body): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send({ action, args });
}

function names(res: supertest.Response): string[] {
  return (res.body.resources as Row[]).map((r) => r.name);
}

function expectProblem(res: supertest.Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(JSON.stringify(res.body)).not.toMatch(/SELECT |FROM resources|\$\d+::|\.ts:\d+|at .*\.js/);
}

const bytewise = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Every resource of `c` in `sort`'s order, computed here from the full listing. */
function ordered(rows: Row[], sort: string): string[] {
  const descending = sort.startsWith('-');
  const key = (descending ? sort.slice(1) : sort) as 'name' | 'updatedAt' | 'createdAt';
  const sorted = [...rows].sort((a, b) => {
    const byKey = key === 'name' ? 0 : a[key] - b[key];
    return byKey !== 0 ? byKey : bytewise(a.name, b.name);
  });
  return (descending ? sorted.reverse() : sorted).map((r) => r.name);
}

async function pageThrough(c: string, query: Record<string, string>): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const res = await list(c, { ...query, ...(cursor ? { cursor } : {}) }).expect(200);
    pages.push(names(res));
    cursor = res.body.nextCursor as string | null;
    expect(pages.length).toBeLessThan(50);
  } while (cursor !== null);
  return pages;
}

// ---- a conversation of orders ---------------------------------------------------

const c = uniqueId('q');
const STATUSES = ['open', 'closed', 'pending'];
let all: Row[];

beforeAll(async () => {
  for (let i = 0; i < 24; i++) {
    const name = `order-${String(i).padStart(2, '0')}`;
    const data = { status: STATUSES[i % 3], amount: i * 10, owner: i % 2 === 0 ? 'ann' : 'o\'brien "the" tester' };
    await request(t.app).put(`/conversations/${c}/resources/${name}`).send({ data }).expect(201);
  }
  await request(t.app).put(`/conversations/${c}/resources/note`).send({ data: 'plain text' }).expect(201);
  // Ties: five rows share an updatedAt (and four a createdAt), so only the name orders them.
  await t.db.pool.query(
    `UPDATE resources SET updated_at = '2026-01-01T00:00:00.000Z' WHERE conversation_id = $1 AND name = ANY($2)`,
    [c, ['order-03', 'order-07', 'order-11', 'order-15', 'order-19']],
  );
  await t.db.pool.query(
    `UPDATE resources SET created_at = '2026-01-02T00:00:00.000Z' WHERE conversation_id = $1 AND name = ANY($2)`,
    [c, ['order-01', 'order-02', 'order-20', 'note']],
  );
  all = (await list(c, { limit: '500' }).expect(200)).body.resources as Row[];
  expect(all).toHaveLength(25);
});

describe('filter', () => {
  it('an equality filter returns exactly the matching resources, in name order', async () => {
    const res = await list(c, { filter: '$.status == "open"' }).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['nextCursor', 'resources']);
    expect(names(res)).toEqual(all.filter((r) => r.data.status === 'open').map((r) => r.name));
    expect(names(res)).toHaveLength(8);
    expect(res.body.nextCursor).toBeNull();
  });

  it('combines predicates, and with prefix and createdBy', async () => {
    const both = await list(c, { filter: '$.status == "open" && $.amount > 100' }).expect(200);
    expect(names(both)).toEqual(['order-12', 'order-15', 'order-18', 'order-21']);
    const narrowed = await list(c, { filter: '$.amount >= 200', prefix: 'order-2', createdBy: 'client' }).expect(200);
    expect(names(narrowed)).toEqual(['order-20', 'order-21', 'order-22', 'order-23']);
    expect(names(await list(c, { filter: '$.amount >= 200', createdBy: 'data-tool' }).expect(200))).toEqual([]);
  });

  it('strings with quotes match exactly, as values', async () => {
    const res = await list(c, { filter: String.raw`$.owner == "o'brien \"the\" tester"` }).expect(200);
    expect(names(res)).toEqual(all.filter((r) => r.data.owner !== 'ann' && r.data.owner).map((r) => r.name));
    expect(names(res)).toHaveLength(12);
  });

  it('regex, exists and a non-object resource: the data of each is what the path sees', async () => {
    expect(names(await list(c, { filter: '$.owner like_regex "^O\'B" flag "i"' }).expect(200))).toHaveLength(12);
    expect(names(await list(c, { filter: 'exists($.status)' }).expect(200))).toHaveLength(24);
    expect(names(await list(c, { filter: '$ == "plain text"' }).expect(200))).toEqual(['note']);
    // A path that is not a predicate matches nothing (Postgres' @@), rather than failing.
    expect(names(await list(c, { filter: '$.status' }).expect(200))).toEqual([]);
  });

  it('a missing conversation is 404, filter or not', async () => {
    expectProblem(await list(uniqueId('none'), { filter: '$.a == 1' }), 404, 'not_found');
    expectProblem(await list(uniqueId('none'), {}), 404, 'not_found');
  });
});

describe('sort and cursors', () => {
  it.each(['name', '-name', 'updatedAt', '-updatedAt', 'createdAt', '-createdAt'])(
    'sort=%s: pages of 4 give every resource exactly once, in order (ties by name)',
    async (sort) => {
      const pages = await pageThrough(c, { sort, limit: '4' });
      expect(pages.map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 4, 1]);
      expect(pages.flat()).toEqual(ordered(all, sort));
    },
  );

  it('sorts and pages a filtered query', async () => {
    const pages = await pageThrough(c, { sort: '-updatedAt', limit: '3', filter: '$.status != "closed"' });
    const expected = ordered(
      all.filter((r) => r.data.status !== undefined && r.data.status !== 'closed'),
      '-updatedAt',
    );
    expect(pages.flat()).toEqual(expected);
    expect(pages).toHaveLength(Math.ceil(expected.length / 3));
  });

  it('a cursor is refused under another sort, and one the API never made is refused', async () => {
    const first = await list(c, { sort: 'updatedAt', limit: '2' }).expect(200);
    const cursor = first.body.nextCursor as string;
    const other = await list(c, { sort: 'createdAt', limit: '2', cursor });
    expectProblem(other, 400, 'validation_failed');
    expect(other.body.detail).toContain('sort=updatedAt');
    expectProblem(await list(c, { cursor }), 400, 'validation_failed');
    const nameCursor = (await list(c, { limit: '2' }).expect(200)).body.nextCursor as string;
    expectProblem(await list(c, { sort: '-name', cursor: nameCursor }), 400, 'validation_failed');
    const forged = Buffer.from(JSON.stringify(['updatedAt', 'x', 'order-01'])).toString('base64url');
    expectProblem(await list(c, { sort: 'updatedAt', cursor: forged }), 400, 'validation_failed');
  });

  it.each(['size', '--name', 'Name', '-', ''])('sort=%j: 400', async (sort) => {
    expectProblem(await list(c, { sort }), 400, 'validation_failed');
  });
});

describe('updatedBy and updatedSince', () => {
  const u = uniqueId('q-upd');
  let changedAt: number;

  beforeAll(async () => {
    for (const name of ['a', 'b', 'c', 'd']) {
      await request(t.app).put(`/conversations/${u}/resources/${name}`).send({ data: { name } }).expect(201);
    }
    await request(t.app).put(`/conversations/${u}/permissions/data-tool`).send({ level: 2 }).expect(200);
    const updated = await neg(u, 'data-tool/update-resource', { name: 'b', data: { name: 'b', v: 2 } }).expect(200);
    changedAt = (updated.body.output as Row).updatedAt;
    await neg(u, 'data-tool/update-resource', { name: 'd', data: { name: 'd', v: 2 } }).expect(200);
  });

  it('updatedBy names who wrote last', async () => {
    expect(names(await list(u, { updatedBy: 'data-tool' }).expect(200))).toEqual(['b', 'd']);
    expect(names(await list(u, { updatedBy: 'client' }).expect(200))).toEqual(['a', 'c']);
    expect(names(await list(u, { updatedBy: 'data-tool', filter: '$.name == "d"' }).expect(200))).toEqual(['d']);
  });

  it('updatedSince includes that instant and what follows', async () => {
    const since = await list(u, { updatedSince: String(changedAt), sort: 'updatedAt' }).expect(200);
    expect(names(since)).toEqual(['b', 'd']);
    for (const r of since.body.resources as Row[]) expect(r.updatedAt).toBeGreaterThanOrEqual(changedAt);
    expect(names(await list(u, { updatedSince: String(changedAt + 60_000) }).expect(200))).toEqual([]);
  });

  it.each(['-1', 'yesterday', '1.5', '99999999999999999999'])('updatedSince=%s: 400', async (updatedSince) => {
    expectProblem(await list(u, { updatedSince }), 400, 'validation_failed');
  });
});

describe('expired resources', () => {
  it('are neither listed nor queried; a future expiry still is', async () => {
    const e = uniqueId('q-exp');
    for (const name of ['gone', 'kept', 'later']) {
      await request(t.app)
        .put(`/conversations/${e}/resources/${name}`)
        .send({ data: { k: 1 } })
        .expect(201);
    }
    await t.db.pool.query(
      `UPDATE resources SET expires_at = CASE name WHEN 'gone' THEN now() - interval '1 second' ELSE now() + interval '1 hour' END
       WHERE conversation_id = $1 AND name IN ('gone', 'later')`,
      [e],
    );
    expect(names(await list(e, {}).expect(200))).toEqual(['kept', 'later']);
    expect(names(await list(e, { filter: '$.k == 1', sort: '-createdAt' }).expect(200)).sort()).toEqual([
      'kept',
      'later',
    ]);
    const state = await request(t.app).get(`/conversations/${e}/state`).expect(200);
    expect((state.body.sharedContext.resources as Row[]).map((r) => r.name).sort()).toEqual(['kept', 'later']);
  });
});

describe('bad filters are 400 validation_failed with the database message', () => {
  it.each([
    ['$.status ==', /syntax error/],
    ['$.status == $missing', /could not find jsonpath variable "missing"/],
    ['$.owner like_regex "(("', /invalid regular expression/],
    ['$.owner like_regex "a" flag "z"', /Unrecognized flag character "z"/],
    ['status = open', /syntax error/],
  ])('%s', async (filter, message) => {
    const res = await list(c, { filter });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.detail).toMatch(message);
    expect(res.body.errors).toEqual([{ path: 'filter', message: expect.stringMatching(message) }]);
  });

  it('an unknown variable is refused on an empty conversation too', async () => {
    const empty = uniqueId('q-empty');
    await request(t.app).post('/conversations').send({ id: empty }).expect(201);
    expectProblem(await list(empty, { filter: '$.a == $x' }), 400, 'validation_failed');
  });

  it('an empty or overlong filter is refused before the database sees it', async () => {
    expectProblem(await list(c, { filter: '' }), 400, 'validation_failed');
    const long = await list(c, { filter: `$.a == "${'x'.repeat(5000)}"` });
    expectProblem(long, 400, 'validation_failed');
    expect(long.body.detail).toContain('4096');
  });
});

describe('hostile filters', () => {
  let before: number;
  beforeAll(async () => {
    before = ((await t.db.pool.query('SELECT count(*)::int AS n FROM resources')).rows[0] as { n: number }).n;
  });
  afterAll(async () => {
    const after = ((await t.db.pool.query('SELECT count(*)::int AS n FROM resources')).rows[0] as { n: number }).n;
    expect(after).toBeGreaterThanOrEqual(before);
    expect(names(await list(c, { filter: '$.status == "open"' }).expect(200))).toHaveLength(8);
  });

  it.each([
    "'; DROP TABLE resources; --",
    '$.status == "open"\'; DELETE FROM resources; --',
    '$.status == "open") OR (1 = 1',
    "$.status == 'open' OR 1=1",
    '$.a == 1::jsonpath; SELECT pg_sleep(10)',
    '$.a == 1 /* */ UNION SELECT * FROM api_keys',
    '$.a == "\\u0000"',
  ])('injection attempt %j: 400, nothing run', async (filter) => {
    const res = await list(c, { filter });
    expectProblem(res, 400, 'validation_failed');
  });

  it('SQL inside a jsonpath string is only a string, and SQL in the other parameters only a value', async () => {
    expect(names(await list(c, { filter: `$.owner == "x'; DROP TABLE resources; --"` }).expect(200))).toEqual([]);
    for (const key of ['prefix', 'createdBy', 'updatedBy']) {
      expect(names(await list(c, { [key]: "' OR 1=1 --" }).expect(200))).toEqual([]);
    }
  });

  it('a NUL character is a 400', async () => {
    expectProblem(await list(c, { filter: '$.a == "\u0000"' }), 400, 'validation_failed');
  });

  it('deep nesting and long chains are answered, never 500', async () => {
    const deep = `${'('.repeat(1500)}$.amount == 10${')'.repeat(1500)}`;
    expect([200, 400]).toContain((await list(c, { filter: deep })).status);
    const negations = `${'!('.repeat(1000)}$.amount == 10${')'.repeat(1000)}`;
    expect([200, 400]).toContain((await list(c, { filter: negations })).status);
    const chain = Array.from({ length: 200 }, (_, i) => `$.amount == ${i * 10}`).join(' || ');
    expect(chain.length).toBeLessThan(4096);
    expect(names(await list(c, { filter: chain }).expect(200))).toHaveLength(24);
  });

  it('a catastrophic regex runs into QUERY_TIMEOUT_MS: 400 query_too_expensive, and the service answers on', async () => {
    const slow = uniqueId('q-slow');
    for (let i = 0; i < 3; i++) {
      await request(t.app)
        .put(`/conversations/${slow}/resources/s-${i}`)
        .send({ data: { s: SLOW_TEXT } })
        .expect(201);
    }
    const started = Date.now();
    const res = await list(slow, { filter: SLOW_FILTER });
    expectProblem(res, 400, 'query_too_expensive');
    if (t.database.embedded) {
      // PGlite (no TEST_DATABASE_URL) cannot cancel a statement: the pattern is refused before it runs.
      expect(res.body.detail).toMatch(/back reference/);
      return;
    }
    expect(res.body.detail).toContain(`QUERY_TIMEOUT_MS (${QUERY_TIMEOUT_MS} ms)`);
    // Cancelled by the database, not left running: the answer came long before the regex would finish.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(names(await list(slow, { filter: '$.s like_regex "^a+$"' }).expect(200))).toEqual(['s-0', 's-1', 's-2']);
    // The timeout was the query's own (SET LOCAL): a pooled connection keeps the service's.
    const { rows } = await t.db.pool.query<{ statement_timeout: string }>('SHOW statement_timeout');
    expect(rows[0]!.statement_timeout).toBe('30s');
  });
});

describe('through tools', () => {
  it("a TOOLS_DIR tool's ctx.sharedContext.queryResources pages with filter and sort", async () => {
    let cursor: string | undefined;
    const seen: string[] = [];
    do {
      const res = await neg(c, 'query-tool/query', {
        query: { filter: '$.status == "pending"', sort: '-name', limit: 3, ...(cursor ? { cursor } : {}) },
      }).expect(200);
      const page = res.body.output as { resources: Row[]; nextCursor: string | null };
      seen.push(...page.resources.map((r) => r.name));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toEqual(
      ordered(
        all.filter((r) => r.data.status === 'pending'),
        '-name',
      ),
    );
  });

  it("a bad filter or a timeout is the tool call's invalid_args with the reason", async () => {
    const bad = await neg(c, 'query-tool/query', { query: { filter: '$.a ==' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, code: 'invalid_args' });
    expect(bad.body.error).toMatch(/syntax error/);
    const limit = await neg(c, 'query-tool/query', { query: { limit: 501 } });
    expect(limit.body).toMatchObject({ code: 'invalid_args' });
  });

  it('inside a write action a failing query leaves the action able to write (a savepoint)', async () => {
    const w = uniqueId('q-write');
    await request(t.app)
      .put(`/conversations/${w}/resources/s`)
      .send({ data: { s: SLOW_TEXT } })
      .expect(201);
    await request(t.app).put(`/conversations/${w}/permissions/query-tool`).send({ level: 2 }).expect(200);
    for (const [filter, failure] of [
      ['$.a ==', 'invalid_args'],
      [SLOW_FILTER, 'invalid_args'],
      ['$.s like_regex "^a"', null],
    ] as const) {
      const name = uniqueId('after');
      const res = await neg(w, 'query-tool/query-then-write', { filter, name }).expect(200);
      expect(res.body.output).toEqual({ failure });
      const written = await request(t.app).get(`/conversations/${w}/resources/${name}`).expect(200);
      expect(written.body.data).toEqual({ after: failure });
    }
  });

  it('analytics-tool/count-resources counts and summarizes what a filter matches', async () => {
    const all24 = await neg(c, 'analytics-tool/count-resources', {}).expect(200);
    expect(all24.body.output).toEqual({ count: 25 });
    const open = await neg(c, 'analytics-tool/count-resources', {
      filter: '$.status == "open"',
      field: 'amount',
    }).expect(200);
    const amounts = all.filter((r) => r.data.status === 'open').map((r) => r.data.amount as number);
    const sum = amounts.reduce((a, b) => a + b, 0);
    expect(open.body.output).toEqual({
      count: 8,
      field: 'amount',
      fieldCount: 8,
      stats: { count: 8, min: Math.min(...amounts), max: Math.max(...amounts), mean: sum / 8, sum },
    });
    const bad = await neg(c, 'analytics-tool/count-resources', { filter: '$.x == $y' });
    expect(bad.body).toMatchObject({ success: false, code: 'invalid_args' });
  });
});

describe('MCP resources/list', () => {
  it('pages with opaque cursors through the query path, expired resources left out', async () => {
    const m = uniqueId('q-mcp');
    await request(t.app).post('/conversations').send({ id: m }).expect(201);
    // 520 resources and one expired: more than one MCP page (500).
    await t.db.pool.query(
      `INSERT INTO resources (conversation_id, name, data, created_by, updated_by, expires_at)
       SELECT $1, 'r-' || lpad(i::text, 4, '0'), jsonb_build_object('i', i), 'client', 'client',
              CASE WHEN i = 7 THEN now() - interval '1 second' END
       FROM generate_series(1, 521) AS i`,
      [m],
    );
    const listening = t.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => listening.once('listening', resolve));
    const { port } = listening.address() as AddressInfo;
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/conversations/${m}/mcp`), {
      requestInit: { headers: bearer() },
    });
    const client = new Client({ name: 'query-test-client', version: '1.0.0' });
    try {
      await client.connect(transport);
      const first = await client.listResources();
      expect(first.resources).toHaveLength(500);
      expect(typeof first.nextCursor).toBe('string');
      const second = await client.listResources({ cursor: first.nextCursor! });
      expect(second.nextCursor).toBeUndefined();
      const uris = [...first.resources, ...second.resources].map((r) => r.uri);
      const expected = Array.from({ length: 521 }, (_, i) => `r-${String(i + 1).padStart(4, '0')}`)
        .filter((name) => name !== 'r-0007')
        .map((name) => `context://${m}/${name}`);
      expect(uris).toEqual(expected);
      await expect(client.listResources({ cursor: 'not-a-cursor' })).rejects.toMatchObject({
        code: ErrorCode.InvalidParams,
      });
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
      await closeMcpSessions(t.services);
      await new Promise<void>((resolve) => {
        listening.close(() => resolve());
        listening.closeAllConnections();
      });
    }
  });
});
