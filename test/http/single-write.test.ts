/**
 * Actions that declare `singleWrite` (data-tool's create, update and delete):
 * their one write and the call's audit entry go as one statement that
 * commits on its own (no BEGIN/COMMIT). The entry is written exactly when
 * the write changed a row; a refused write leaves the failure's entry only;
 * racing writes each commit once; a write still waiting on a row lock when
 * the tool times out is cancelled; a handler that breaks its promise of one
 * write fails the call without taking the process down.
 */
import { Client } from 'pg';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { serverUrl } from '../support/db-server';
import { sqlStatements } from '../support/sql-statements';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

const TWICE_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'twice-tool', version: '1.0.0', description: 'Declares one write, makes two',
  actions: {
    'write-twice': defineAction({ description: 'Breaks its singleWrite promise', level: 2,
      input: z.object({ name: z.string() }), singleWrite: true,
      handler: async ({ name }, ctx) => {
        await ctx.sharedContext.createResource(name, { first: true });
        return ctx.sharedContext.createResource(name + '-2', { second: true });
      } }),
  },
});
`;

const TIMEOUT_MS = 400;
let t: TestApp;
let toolsDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('single-write-tools', { 'twice-tool.js': TWICE_TOOL });
  t = await createTestApp(
    { TOOLS_DIR: toolsDir.path, TOOL_TIMEOUT_MS: String(TIMEOUT_MS) },
    { registry: { isolateToolsDir: false } },
  );
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

async function conversation(): Promise<string> {
  const id = uniqueId('single');
  await request(t.app).post(`/conversations/${id}/negotiate`).send({ action: 'upgrade:data-tool:level-2' }).expect(200);
  return id;
}

function negotiate(id: string, action: string, args: Record<string, unknown>): supertest.Test {
  return request(t.app).post(`/conversations/${id}/negotiate`).send({ action, args });
}

/** The conversation's negotiate entries (sealed first), as [action, outcome]. */
async function negotiateEntries(id: string): Promise<string[][]> {
  const res = await request(t.app).get(`/conversations/${id}/audit`).query({ limit: 500 }).expect(200);
  const entries = res.body.entries as Array<{ event: string; action?: string; outcome: string }>;
  return entries
    .filter((e) => e.event === 'negotiate' && !e.action?.startsWith('upgrade:'))
    .map((e) => [e.action ?? '', e.outcome]);
}

/** Statements the service sent for a call, by their first word (a named statement by its name). */
async function statements(fn: () => Promise<unknown>): Promise<string[]> {
  return (await sqlStatements(fn)).map((q) => q.split(/\s+/)[0]!);
}

it('sends the write and its audit entry as one statement: two round trips in all', async () => {
  const id = await conversation();
  await negotiate(id, 'create-resource', { name: 'doc', data: { n: 0 } }).expect(200);
  const sent = await statements(() => negotiate(id, 'update-resource', { name: 'doc', data: { n: 1 } }).expect(200));
  // Counted on a server: the embedded database's connections send statements through their own query.
  if (serverUrl()) expect(sent).toEqual(['decision_select', 'resource_update+audit_pending']);
  const doc = await request(t.app).get(`/conversations/${id}/resources/doc`).expect(200);
  expect(doc.body).toMatchObject({ data: { n: 1 }, version: 2 });
  expect(await negotiateEntries(id)).toEqual([
    ['create-resource', 'success'],
    ['update-resource', 'success'],
  ]);
  const verify = await request(t.app).get(`/conversations/${id}/audit/verify`).expect(200);
  expect(verify.body).toMatchObject({ ok: true });
});

it('writes no success entry for a write that changed nothing, only the refusal', async () => {
  const id = await conversation();
  await negotiate(id, 'update-resource', { name: 'missing', data: 1 }).expect(404);
  await negotiate(id, 'delete-resource', { name: 'missing' }).expect(404);
  await negotiate(id, 'create-resource', { name: 'doc', data: 1 }).expect(200);
  await negotiate(id, 'create-resource', { name: 'doc', data: 2 }).expect(409);
  await negotiate(id, 'delete-resource', { name: 'doc' }).expect(200);
  // Refusals are queued and written in batches: the log holds them in the order they were written.
  expect((await negotiateEntries(id)).sort()).toEqual(
    [
      ['update-resource', 'resource_not_found'],
      ['delete-resource', 'resource_not_found'],
      ['create-resource', 'success'],
      ['create-resource', 'resource_exists'],
      ['delete-resource', 'success'],
    ].sort(),
  );
});

it('commits each of 20 racing updates once, each with its entry', async () => {
  const id = await conversation();
  await negotiate(id, 'create-resource', { name: 'doc', data: { n: 0 } }).expect(200);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => negotiate(id, 'update-resource', { name: 'doc', data: { n: i } })),
  );
  expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
  const versions = results.map((r) => (r.body as { output: { version: number } }).output.version).sort((a, b) => a - b);
  expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
  const doc = await request(t.app).get(`/conversations/${id}/resources/doc`).expect(200);
  expect(doc.body.version).toBe(21);
  const entries = await negotiateEntries(id);
  expect(entries.filter(([a, o]) => a === 'update-resource' && o === 'success')).toHaveLength(20);
});

// A server only: the embedded database serves one session at a time, so no other can hold the lock.
(serverUrl() ? it : it.skip)(
  'cancels a write still waiting on a row lock when the tool times out: nothing written, no success entry',
  async () => {
    const id = await conversation();
    await negotiate(id, 'create-resource', { name: 'doc', data: { n: 0 } }).expect(200);
    // Another session holds the row locked past the tool timeout.
    const holder = await t.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM resources WHERE conversation_id = $1 AND name = $2 FOR UPDATE', [id, 'doc']);
      const res = await negotiate(id, 'update-resource', { name: 'doc', data: { n: 1 } }).expect(500);
      expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
      expect(res.body.error).toContain(`within ${TIMEOUT_MS} ms`);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const doc = await request(t.app).get(`/conversations/${id}/resources/doc`).expect(200);
    expect(doc.body).toMatchObject({ data: { n: 0 }, version: 1 });
    expect(await negotiateEntries(id)).toEqual([
      ['create-resource', 'success'],
      ['update-resource', 'tool_error'],
    ]);
    // The service goes on, the row free again.
    await negotiate(id, 'update-resource', { name: 'doc', data: { n: 2 } }).expect(200);
  },
);

// A server only, as above. (From an outside review: the cancel once queued for a pool connection.)
(serverUrl() ? it : it.skip)(
  'answers every timed-out write at the tool timeout even when all pool connections wait on the lock',
  async () => {
    const id = await conversation();
    await negotiate(id, 'create-resource', { name: 'doc', data: { n: 0 } }).expect(200);
    const outside = new Client(t.database.client);
    await outside.connect();
    try {
      // A session outside the service's pool holds the row until every call has been answered.
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM resources WHERE conversation_id = $1 AND name = $2 FOR UPDATE', [id, 'doc']);
      // As many calls as the test app's pool has connections (5): every write waits on the lock.
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => negotiate(id, 'update-resource', { name: 'doc', data: { n: i + 1 } })),
      );
      expect(results.map((r) => [r.status, (r.body as { code?: string }).code])).toEqual(
        Array(5).fill([500, 'tool_error']),
      );
    } finally {
      await outside.query('COMMIT');
      await outside.end();
    }
    const doc = await request(t.app).get(`/conversations/${id}/resources/doc`).expect(200);
    expect(doc.body).toMatchObject({ data: { n: 0 }, version: 1 });
    await negotiate(id, 'update-resource', { name: 'doc', data: { n: 9 } }).expect(200);
  },
);

describe.each([
  ['NUL in a data string', { name: 'doc', data: { s: 'a\u0000b' } }],
  ['NUL in a data key', { name: 'doc', data: { 'a\u0000': 1 } }],
])('bad input, %s (from an outside review)', (_label, args) => {
  it('answers the same 4xx as the same call in a transaction (with an Idempotency-Key)', async () => {
    const id = await conversation();
    const single = await negotiate(id, 'create-resource', args);
    const keyed = await request(t.app)
      .post(`/conversations/${id}/negotiate`)
      .set('Idempotency-Key', uniqueId('k'))
      .send({ action: 'create-resource', args });
    expect(single.status).toBeGreaterThanOrEqual(400);
    expect(single.status).toBeLessThan(500);
    expect([single.status, single.body.code]).toEqual([keyed.status, keyed.body.code]);
  });
});

it('fails a call whose handler breaks its promise of one write (its first write stands), and keeps serving', async () => {
  const id = uniqueId('twice');
  await request(t.app).put(`/conversations/${id}/permissions/twice-tool`).send({ level: 2 }).expect(200);
  const res = await negotiate(id, 'twice-tool/write-twice', { name: 'a' }).expect(500);
  expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
  await request(t.app).get(`/conversations/${id}/resources/a`).expect(200);
  await request(t.app).get(`/conversations/${id}/resources/a-2`).expect(404);
  // The record says both: the write committed (its entry went with it), and the call failed.
  expect(await negotiateEntries(id)).toEqual([
    ['write-twice', 'success'],
    ['write-twice', 'tool_error'],
  ]);
  await request(t.app)
    .post(`/conversations/${id}/negotiate`)
    .send({ action: 'greet', args: { name: 'after' } })
    .expect(200);
});
