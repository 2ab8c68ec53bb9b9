/**
 * The REST endpoints of API.md: conversations, permissions, resources (the
 * shared context) and tools, as an outside client sees them.
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { ID_PATTERN as ID_RE } from '../../src/core/resource-names';
import { BUNDLED_TOOLS } from '../support/fixtures';

const RESOURCE_MAX_BYTES = 1024;
const PROVIDER_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ RESOURCE_MAX_BYTES: String(RESOURCE_MAX_BYTES) });
});
afterAll(async () => t?.close());

// ---- helpers -------------------------------------------------------------------

type Body = Record<string, unknown>;

function expectProblem(res: supertest.Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.status).toBe(status);
  expect(typeof res.body.type).toBe('string');
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
  expect(res.body.stack).toBeUndefined();
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.(js|ts):\d+|SELECT |INSERT INTO|UPDATE .* SET/);
}

function expectValidationProblem(res: supertest.Response): void {
  expectProblem(res, 400, 'validation_failed');
  expect(Array.isArray(res.body.errors)).toBe(true);
  expect(res.body.errors.length).toBeGreaterThan(0);
  for (const e of res.body.errors as Body[]) {
    expect(typeof e.path).toBe('string');
    expect(typeof e.message).toBe('string');
  }
}

function neg(conversationId: string, body: Body): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

function resUrl(conversationId: string, name?: string): string {
  return `/conversations/${conversationId}/resources${name === undefined ? '' : `/${name}`}`;
}

function expectResource(r: Body, expected: Body): void {
  expect(Object.keys(r).sort()).toEqual([
    'createdAt',
    'createdBy',
    'data',
    'name',
    'updatedAt',
    'updatedBy',
    'version',
  ]);
  expect(typeof r.createdAt).toBe('number');
  expect(typeof r.updatedAt).toBe('number');
  expect(r).toMatchObject(expected);
}

async function registeredToolNames(): Promise<string[]> {
  const res = await request(t.app).get('/tools').expect(200);
  return (res.body.tools as { name: string }[]).map((x) => x.name);
}

async function sqlCount(table: string, conversationId: string): Promise<number> {
  const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE conversation_id = $1`, [
    conversationId,
  ]);
  return rows[0].n as number;
}

// ---- conversations ---------------------------------------------------------------

describe('conversations', () => {
  const SHAPE = ['createdAt', 'id', 'legacyLevel', 'metadata', 'owner', 'policy', 'updatedAt'];

  it('POST without id: 201 with a generated id, and GET returns the same conversation', async () => {
    const before = Date.now();
    const res = await request(t.app).post('/conversations').send({});
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(SHAPE);
    expect(res.body.id).toMatch(ID_RE);
    expect(res.body).toMatchObject({ metadata: {}, policy: { deny: [] }, legacyLevel: null, owner: 'admin' });
    expect(typeof res.body.createdAt).toBe('number');
    expect(typeof res.body.updatedAt).toBe('number');
    expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 60000);

    const other = await request(t.app).post('/conversations').send({});
    expect(other.status).toBe(201);
    expect(other.body.id).not.toBe(res.body.id);

    const got = await request(t.app).get(`/conversations/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('POST with id, metadata and policy: 201, GET shape {id, metadata, policy, legacyLevel, owner, createdAt, updatedAt}', async () => {
    const id = uniqueId('rest');
    const body = { id, metadata: { owner: 'ada', tags: ['x'] }, policy: { deny: ['data-tool/*', '*/delete-*'] } };
    const res = await request(t.app).post('/conversations').send(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...body, legacyLevel: null, owner: 'admin' });
    const got = await request(t.app).get(`/conversations/${id}`).expect(200);
    expect(Object.keys(got.body).sort()).toEqual(SHAPE);
    expect(got.body).toMatchObject({ ...body, legacyLevel: null, owner: 'admin' });
    expect(typeof got.body.createdAt).toBe('number');
    expect(typeof got.body.updatedAt).toBe('number');
  });

  it('POST with an existing id: 409 conflict', async () => {
    const id = uniqueId('rest');
    expect((await request(t.app).post('/conversations').send({ id })).status).toBe(201);
    expectProblem(await request(t.app).post('/conversations').send({ id }), 409, 'conflict');
  });

  it.each([
    ['a space', 'has space'],
    ['a dot', 'a.b'],
    ['a slash', 'slash/es'],
    ['129 characters', 'x'.repeat(129)],
    ['empty', ''],
  ])('POST with an invalid id (%s): 400', async (_label, id) => {
    expectValidationProblem(await request(t.app).post('/conversations').send({ id }));
  });

  it.each([
    ['no slash', ['data-tool']],
    ['upper case', ['Data-Tool/*']],
    ['not a string', [42]],
    ['not an array', 'data-tool/*'],
  ])('POST with a bad policy pattern (%s): 400 with errors[]', async (_label, deny) => {
    const id = uniqueId('rest');
    expectValidationProblem(await request(t.app).post('/conversations').send({ id, policy: { deny } }));
    expectProblem(await request(t.app).get(`/conversations/${id}`), 404, 'not_found');
  });

  it('POST with metadata that is not an object: 400', async () => {
    expectValidationProblem(
      await request(t.app)
        .post('/conversations')
        .send({ id: uniqueId('rest'), metadata: 'nope' }),
    );
  });

  it('GET an unknown conversation: 404', async () => {
    expectProblem(await request(t.app).get(`/conversations/${uniqueId('missing')}`), 404, 'not_found');
  });

  it('DELETE: 204, then 404; its resources, permissions and history are gone', async () => {
    const c = uniqueId('del');
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    expect(
      (
        await request(t.app)
          .put(resUrl(c, 'doc'))
          .send({ data: { a: 1 } })
      ).status,
    ).toBe(201);
    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 })).status).toBe(200);
    expect((await neg(c, { action: 'create-resource', args: { name: 'doc2', data: 2 } })).status).toBe(200);
    expect(await sqlCount('resources', c)).toBe(2);
    expect(await sqlCount('tool_permissions', c)).toBe(1);
    expect(await sqlCount('permission_history', c)).toBe(1);

    const del = await request(t.app).delete(`/conversations/${c}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectProblem(await request(t.app).get(`/conversations/${c}`), 404, 'not_found');
    expectProblem(await request(t.app).delete(`/conversations/${c}`), 404, 'not_found');
    expectProblem(await request(t.app).get(resUrl(c, 'doc')), 404, 'not_found');

    expect(await sqlCount('resources', c)).toBe(0);
    expect(await sqlCount('tool_permissions', c)).toBe(0);
    expect(await sqlCount('permission_history', c)).toBe(0);

    // The same id starts from nothing.
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    expect((await request(t.app).get(resUrl(c)).expect(200)).body.resources).toEqual([]);
    const perms = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    for (const p of perms.body.tools as Body[]) expect(p).toMatchObject({ level: 1, source: 'default' });
    expect((await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200)).body.events).toEqual([]);
  });

  it('GET /state: the seed M5 shape', async () => {
    const c = uniqueId('state');
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    const empty = await request(t.app).get(`/conversations/${c}/state`).expect(200);
    expect(empty.body).toEqual({ currentLevel: null, toolPermissions: {}, sharedContext: { resources: [] } });

    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 })).status).toBe(200);
    expect((await neg(c, { action: 'create-resource', args: { name: 'b', data: [1] } })).status).toBe(200);
    expect((await request(t.app).put(resUrl(c, 'a')).send({ data: 'x' })).status).toBe(201);

    const state = await request(t.app).get(`/conversations/${c}/state`).expect(200);
    expect(Object.keys(state.body).sort()).toEqual(['currentLevel', 'sharedContext', 'toolPermissions']);
    expect(state.body.currentLevel).toBeNull();
    expect(Object.keys(state.body.toolPermissions)).toEqual(['data-tool']);
    expect(Object.keys(state.body.toolPermissions['data-tool']).sort()).toEqual(['level', 'upgradedAt']);
    expect(state.body.toolPermissions['data-tool'].level).toBe(2);
    expect(typeof state.body.toolPermissions['data-tool'].upgradedAt).toBe('number');
    const resources = state.body.sharedContext.resources as Body[];
    expect([...resources].map((r) => r.name).sort()).toEqual(['a', 'b']);
    for (const r of resources) expectResource(r, {});
    expect(resources.find((r) => r.name === 'b')).toMatchObject({ data: [1], createdBy: 'data-tool', version: 1 });
    expect(resources.find((r) => r.name === 'a')).toMatchObject({ data: 'x', createdBy: 'client', version: 1 });
  });

  it('GET /state of an unknown conversation: 404', async () => {
    expectProblem(await request(t.app).get(`/conversations/${uniqueId('missing')}/state`), 404, 'not_found');
  });
});

// ---- permissions -----------------------------------------------------------------

describe('permissions', () => {
  it('GET: one default row per registered tool', async () => {
    const c = uniqueId('perm');
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    const res = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['conversationId', 'legacyLevel', 'tools']);
    expect(res.body.conversationId).toBe(c);
    expect(res.body.legacyLevel).toBeNull();
    const rows = res.body.tools as Body[];
    expect(rows.map((r) => r.tool).sort()).toEqual([...(await registeredToolNames())].sort());
    for (const r of rows) {
      expect(Object.keys(r).sort()).toEqual(['level', 'source', 'tool', 'upgradedAt']);
      expect(r).toMatchObject({ level: 1, source: 'default', upgradedAt: null });
    }
  });

  it('PUT: 200 {tool, level, previousLevel}; the row becomes explicit', async () => {
    const c = uniqueId('perm');
    const up = await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 });
    expect(up.status).toBe(200);
    expect(up.body).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });

    const down = await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 1 });
    expect(down.status).toBe(200);
    expect(down.body).toEqual({ tool: 'data-tool', level: 1, previousLevel: 2 });

    const three = await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 3 });
    expect(three.body).toEqual({ tool: 'data-tool', level: 3, previousLevel: 1 });

    const res = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    const rows = res.body.tools as Body[];
    const data = rows.find((r) => r.tool === 'data-tool')!;
    expect(data).toMatchObject({ level: 3, source: 'explicit' });
    expect(typeof data.upgradedAt).toBe('number');
    for (const r of rows.filter((x) => x.tool !== 'data-tool'))
      expect(r).toMatchObject({ level: 1, source: 'default', upgradedAt: null });

    // The explicit level is what negotiate enforces.
    expect((await neg(c, { action: 'create-resource', args: { name: 'p', data: 1 } })).status).toBe(200);
  });

  it('PUT for an unknown tool: 404', async () => {
    const c = uniqueId('perm');
    expectProblem(
      await request(t.app).put(`/conversations/${c}/permissions/no-such-tool`).send({ level: 2 }),
      404,
      'not_found',
    );
  });

  it.each([
    ['0', { level: 0 }],
    ['4', { level: 4 }],
    ['"2"', { level: '2' }],
    ['1.5', { level: 1.5 }],
    ['null', { level: null }],
    ['missing', {}],
  ])('PUT with level %s: 400, and the level is unchanged', async (_label, body) => {
    const c = uniqueId('perm');
    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 })).status).toBe(200);
    expectValidationProblem(await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send(body));
    const res = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    expect((res.body.tools as Body[]).find((r) => r.tool === 'data-tool')).toMatchObject({
      level: 2,
      source: 'explicit',
    });
    expect((await request(t.app).get(`/conversations/${c}/permissions/history`)).body.events).toHaveLength(1);
  });

  it('history: {events: [{tool, fromLevel, toLevel, at, actor}]}, oldest first, from REST and negotiate', async () => {
    const c = uniqueId('hist');
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    expect((await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200)).body).toEqual({
      events: [],
    });

    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 })).status).toBe(200);
    expect((await neg(c, { action: 'upgrade:export-tool:level-3' })).status).toBe(200);
    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 1 })).status).toBe(200);

    const res = await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200);
    expect(Object.keys(res.body)).toEqual(['events']);
    const events = res.body.events as Body[];
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(['actor', 'at', 'fromLevel', 'toLevel', 'tool']);
      expect(typeof e.at).toBe('number');
      expect(typeof e.actor).toBe('string');
      expect((e.actor as string).length).toBeGreaterThan(0);
    }
    expect(events.map((e) => [e.tool, e.fromLevel, e.toLevel])).toEqual([
      ['data-tool', 1, 2],
      ['export-tool', 1, 3],
      ['data-tool', 2, 1],
    ]);
    const ats = events.map((e) => e.at as number);
    expect([...ats].sort((a, b) => a - b)).toEqual(ats);
  });

  it('legacy: an M4 conversation with legacy_level 2 gives every tool level 2 from source legacy', async () => {
    const c = uniqueId('legacy');
    await t.db.pool.query('INSERT INTO conversations (id, legacy_level) VALUES ($1, 2)', [c]);

    const conv = await request(t.app).get(`/conversations/${c}`).expect(200);
    expect(conv.body.legacyLevel).toBe(2);

    const perms = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    expect(perms.body.legacyLevel).toBe(2);
    const rows = perms.body.tools as Body[];
    expect(rows.map((r) => r.tool).sort()).toEqual([...(await registeredToolNames())].sort());
    for (const r of rows) expect(r).toMatchObject({ level: 2, source: 'legacy', upgradedAt: null });

    const state = await request(t.app).get(`/conversations/${c}/state`).expect(200);
    expect(state.body.currentLevel).toBe(2);

    // A write is allowed without an upgrade; an execute is not.
    const write = await neg(c, { action: 'create-resource', args: { name: 'legacy-doc', data: { m4: true } } });
    expect(write.status).toBe(200);
    expect(write.body.success).toBe(true);
    const exec = await neg(c, { action: 'write-export', args: { name: 'legacy-doc', format: 'json', path: 'x.json' } });
    expect(exec.status).toBe(403);
    expect(exec.body.code).toBe('permission_required');

    // An explicit level wins over the legacy one.
    const set = await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 1 });
    expect(set.body).toEqual({ tool: 'data-tool', level: 1, previousLevel: 2 });
    const after = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    expect((after.body.tools as Body[]).find((r) => r.tool === 'data-tool')).toMatchObject({
      level: 1,
      source: 'explicit',
    });
    expect((after.body.tools as Body[]).find((r) => r.tool === 'transform-tool')).toMatchObject({
      level: 2,
      source: 'legacy',
    });
    expect((await neg(c, { action: 'update-resource', args: { name: 'legacy-doc', data: 1 } })).status).toBe(403);
  });

  it('lists one permission row per registered tool, even with a stored level of an unregistered tool', async () => {
    const id = uniqueId('edge');
    await request(t.app).post('/conversations').send({ id }).expect(201);
    await t.db.pool.query(
      "INSERT INTO tool_permissions (conversation_id, tool, level) VALUES ($1, 'retired-tool', 3)",
      [id],
    );
    const res = await request(t.app).get(`/conversations/${id}/permissions`).expect(200);
    const tools = (await request(t.app).get('/tools').expect(200)).body.tools.map((x: { name: string }) => x.name);
    expect(res.body.tools.map((r: { tool: string }) => r.tool)).toEqual(tools);
  });

  it('GET permissions and history of an unknown conversation: 404', async () => {
    const c = uniqueId('missing');
    expectProblem(await request(t.app).get(`/conversations/${c}/permissions`), 404, 'not_found');
    expectProblem(await request(t.app).get(`/conversations/${c}/permissions/history`), 404, 'not_found');
  });
});

// ---- resources -------------------------------------------------------------------

describe('resources', () => {
  it('PUT creates (201) then updates (200) as client; version and ETag follow', async () => {
    const c = uniqueId('res');
    const created = await request(t.app)
      .put(resUrl(c, 'doc'))
      .send({ data: { a: 1 } });
    expect(created.status).toBe(201);
    expectResource(created.body, { name: 'doc', data: { a: 1 }, createdBy: 'client', updatedBy: 'client', version: 1 });
    expect(created.headers.etag).toBe('"1"');

    const updated = await request(t.app)
      .put(resUrl(c, 'doc'))
      .send({ data: [1, 2] });
    expect(updated.status).toBe(200);
    expectResource(updated.body, { name: 'doc', data: [1, 2], createdBy: 'client', updatedBy: 'client', version: 2 });
    expect(updated.headers.etag).toBe('"2"');
    expect(updated.body.createdAt).toBe(created.body.createdAt);
    expect(updated.body.updatedAt).toBeGreaterThanOrEqual(created.body.updatedAt);

    const got = await request(t.app).get(resUrl(c, 'doc'));
    expect(got.status).toBe(200);
    expect(got.headers.etag).toBe('"2"');
    expect(got.body).toEqual(updated.body);

    // Any JSON value is data, including null and scalars.
    for (const [i, data] of [null, 0, 'text', false].entries()) {
      const r = await request(t.app).put(resUrl(c, 'doc')).send({ data });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ data, version: 3 + i });
    }
  });

  it('ownership: a tool update shows in updatedBy, a later client PUT takes it back', async () => {
    const c = uniqueId('res');
    expect((await request(t.app).put(resUrl(c, 'shared')).send({ data: 1 })).status).toBe(201);
    expect((await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 })).status).toBe(200);
    expect((await neg(c, { action: 'update-resource', args: { name: 'shared', data: 2 } })).status).toBe(200);
    const byTool = await request(t.app).get(resUrl(c, 'shared')).expect(200);
    expect(byTool.body).toMatchObject({ data: 2, createdBy: 'client', updatedBy: 'data-tool', version: 2 });
    expect(byTool.headers.etag).toBe('"2"');
    const byClient = await request(t.app).put(resUrl(c, 'shared')).send({ data: 3 }).expect(200);
    expect(byClient.body).toMatchObject({ data: 3, createdBy: 'client', updatedBy: 'client', version: 3 });
  });

  it('If-Match: the current version updates (200), a stale one is 412 and changes nothing', async () => {
    const c = uniqueId('res');
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 'v1' }).expect(201);
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 'v2' }).expect(200);

    const ok = await request(t.app).put(resUrl(c, 'doc')).set('If-Match', '"2"').send({ data: 'v3' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ data: 'v3', version: 3 });
    expect(ok.headers.etag).toBe('"3"');

    expectProblem(
      await request(t.app).put(resUrl(c, 'doc')).set('If-Match', '"2"').send({ data: 'lost' }),
      412,
      'precondition_failed',
    );
    const got = await request(t.app).get(resUrl(c, 'doc')).expect(200);
    expect(got.body).toMatchObject({ data: 'v3', version: 3 });
    expect(got.headers.etag).toBe('"3"');
  });

  it('If-Match on a missing resource creates nothing', async () => {
    const c = uniqueId('res');
    const res = await request(t.app).put(resUrl(c, 'ghost')).set('If-Match', '"1"').send({ data: 1 });
    expect([404, 412]).toContain(res.status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await request(t.app).get(resUrl(c, 'ghost'))).status).toBe(404);
  });

  it('If-None-Match: * creates (201) when new, 412 when it exists', async () => {
    const c = uniqueId('res');
    const first = await request(t.app).put(resUrl(c, 'once')).set('If-None-Match', '*').send({ data: 'first' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ data: 'first', version: 1, createdBy: 'client' });
    expectProblem(
      await request(t.app).put(resUrl(c, 'once')).set('If-None-Match', '*').send({ data: 'second' }),
      412,
      'precondition_failed',
    );
    expect((await request(t.app).get(resUrl(c, 'once')).expect(200)).body).toMatchObject({ data: 'first', version: 1 });
  });

  it('DELETE: 204, then 404; a stale If-Match is 412 and keeps it', async () => {
    const c = uniqueId('res');
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 1 }).expect(201);
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 2 }).expect(200);

    expectProblem(await request(t.app).delete(resUrl(c, 'doc')).set('If-Match', '"1"'), 412, 'precondition_failed');
    expect((await request(t.app).get(resUrl(c, 'doc')).expect(200)).body).toMatchObject({ data: 2, version: 2 });

    const del = await request(t.app).delete(resUrl(c, 'doc')).set('If-Match', '"2"');
    expect(del.status).toBe(204);
    expectProblem(await request(t.app).get(resUrl(c, 'doc')), 404, 'not_found');

    await request(t.app).put(resUrl(c, 'plain')).send({ data: 1 }).expect(201);
    expect((await request(t.app).delete(resUrl(c, 'plain'))).status).toBe(204);
    expectProblem(await request(t.app).get(resUrl(c, 'plain')), 404, 'not_found');
    expectProblem(await request(t.app).delete(resUrl(c, 'plain')), 404, 'not_found');
  });

  it('data over RESOURCE_MAX_BYTES: 413 payload_too_large, nothing stored', async () => {
    const c = uniqueId('res');
    const big = 'x'.repeat(RESOURCE_MAX_BYTES + 1);
    expectProblem(await request(t.app).put(resUrl(c, 'big')).send({ data: big }), 413, 'payload_too_large');
    expect((await request(t.app).get(resUrl(c, 'big'))).status).toBe(404);

    await request(t.app).put(resUrl(c, 'small')).send({ data: 'ok' }).expect(201);
    expectProblem(await request(t.app).put(resUrl(c, 'small')).send({ data: big }), 413, 'payload_too_large');
    expect((await request(t.app).get(resUrl(c, 'small')).expect(200)).body).toMatchObject({ data: 'ok', version: 1 });
  });

  it('PUT without data: 400', async () => {
    const c = uniqueId('res');
    expectValidationProblem(await request(t.app).put(resUrl(c, 'nodata')).send({}));
    expect((await request(t.app).get(resUrl(c, 'nodata'))).status).toBe(404);
  });

  it('PUT of a resource with null data stores null', async () => {
    const id = uniqueId('edge');
    const res = await request(t.app).put(`/conversations/${id}/resources/doc`).send({ data: null }).expect(201);
    expect(res.body.data).toBeNull();
  });

  it.each([
    ['a space', 'has%20space'],
    ['a dot', 'a.b'],
    ['non-ASCII', 'caf%C3%A9'],
    ['129 characters', 'x'.repeat(129)],
  ])('invalid resource name (%s): 400', async (_label, name) => {
    const c = uniqueId('res');
    expectValidationProblem(await request(t.app).put(resUrl(c, name)).send({ data: 1 }));
    expectValidationProblem(await request(t.app).get(resUrl(c, name)));
  });

  it('invalid conversation id on the resource endpoints: 400', async () => {
    expectValidationProblem(await request(t.app).put('/conversations/bad.id/resources/doc').send({ data: 1 }));
  });

  describe('list', () => {
    const c = uniqueId('list');
    const byClient = ['b-2', 'a-1', 'c-1', 'a-3'];
    const byTool = ['a-2', 'b-1', 'd-1'];
    const all = [...byClient, ...byTool].sort();

    beforeAll(async () => {
      for (const name of byClient) await request(t.app).put(resUrl(c, name)).send({ data: { name } }).expect(201);
      await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
      for (const name of byTool)
        expect((await neg(c, { action: 'create-resource', args: { name, data: { name } } })).status).toBe(200);
    });

    it('ordered by name, nextCursor null when everything fits', async () => {
      const res = await request(t.app).get(resUrl(c)).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['nextCursor', 'resources']);
      expect((res.body.resources as Body[]).map((r) => r.name)).toEqual(all);
      for (const r of res.body.resources as Body[]) expectResource(r, {});
      expect(res.body.nextCursor).toBeNull();
    });

    it('prefix filter', async () => {
      const res = await request(t.app).get(resUrl(c)).query({ prefix: 'a-' }).expect(200);
      expect((res.body.resources as Body[]).map((r) => r.name)).toEqual(['a-1', 'a-2', 'a-3']);
    });

    it('createdBy filter', async () => {
      const tool = await request(t.app).get(resUrl(c)).query({ createdBy: 'data-tool' }).expect(200);
      expect((tool.body.resources as Body[]).map((r) => r.name)).toEqual([...byTool].sort());
      const client = await request(t.app).get(resUrl(c)).query({ createdBy: 'client' }).expect(200);
      expect((client.body.resources as Body[]).map((r) => r.name)).toEqual([...byClient].sort());
      const both = await request(t.app).get(resUrl(c)).query({ createdBy: 'client', prefix: 'a-' }).expect(200);
      expect((both.body.resources as Body[]).map((r) => r.name)).toEqual(['a-1', 'a-3']);
    });

    it.each(['0', '501', '-1', 'abc', '1.5'])('limit=%s: 400', async (limit) => {
      expectValidationProblem(await request(t.app).get(resUrl(c)).query({ limit }));
    });

    it('limit 1 and 500 are accepted', async () => {
      expect((await request(t.app).get(resUrl(c)).query({ limit: '500' }).expect(200)).body.resources).toHaveLength(
        all.length,
      );
      const one = await request(t.app).get(resUrl(c)).query({ limit: '1' }).expect(200);
      expect((one.body.resources as Body[]).map((r) => r.name)).toEqual([all[0]]);
      expect(typeof one.body.nextCursor).toBe('string');
    });

    it('cursor pagination: three pages cover every item exactly once, in order', async () => {
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const q: Record<string, string> = { limit: '3', ...(cursor ? { cursor } : {}) };
        const res = await request(t.app).get(resUrl(c)).query(q).expect(200);
        pages.push((res.body.resources as Body[]).map((r) => r.name as string));
        cursor = res.body.nextCursor as string | null;
        expect(pages.length).toBeLessThanOrEqual(5);
      } while (cursor !== null);
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages.flat()).toEqual(all);
    });

    it('pagination combines with prefix', async () => {
      const first = await request(t.app).get(resUrl(c)).query({ prefix: 'a-', limit: '2' }).expect(200);
      expect((first.body.resources as Body[]).map((r) => r.name)).toEqual(['a-1', 'a-2']);
      expect(typeof first.body.nextCursor).toBe('string');
      const second = await request(t.app)
        .get(resUrl(c))
        .query({ prefix: 'a-', limit: '2', cursor: first.body.nextCursor })
        .expect(200);
      expect((second.body.resources as Body[]).map((r) => r.name)).toEqual(['a-3']);
      expect(second.body.nextCursor).toBeNull();
    });

    it('a cursor the API never returned: 400', async () => {
      expectValidationProblem(await request(t.app).get(resUrl(c)).query({ cursor: '!!not a cursor!!' }));
    });
  });
});

// ---- tools ------------------------------------------------------------------------

describe('tools', () => {
  const BUNDLED = BUNDLED_TOOLS;
  const LEVELS: Record<string, number> = {
    'example-tool/greet': 1,
    'data-tool/create-resource': 2,
    'data-tool/read-resource': 1,
    'data-tool/update-resource': 2,
    'data-tool/list-resources': 1,
    'data-tool/delete-resource': 2,
    'data-tool/apply-batch': 2,
    'transform-tool/transform-resource': 2,
    'analytics-tool/summarize-resource': 1,
    'analytics-tool/count-resources': 1,
    'export-tool/export-resource': 1,
    'export-tool/write-export': 3,
    'calculator/add': 1,
    'calculator/multiply': 1,
    'math-service/add': 1,
    'math-service/integrate': 1,
  };

  it('GET /tools: sorted by name, Tool and Action shapes', async () => {
    const res = await request(t.app).get('/tools').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body)).toEqual(['tools']);
    const tools = res.body.tools as Body[];
    const names = tools.map((x) => x.name as string);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(BUNDLED);
    for (const tool of tools) {
      expect(Object.keys(tool).sort()).toEqual(['actions', 'capabilities', 'description', 'name', 'version']);
      expect(typeof tool.version).toBe('string');
      expect(typeof tool.description).toBe('string');
      const actions = tool.actions as Body[];
      expect([...(tool.capabilities as string[])].sort()).toEqual(actions.map((a) => a.name as string).sort());
      for (const a of actions) {
        // Tool dependencies (API.md, M6): the contracts a bundled action declares, when it declares them.
        const contracts = ['produces', 'requires'].filter((k) => k in a);
        expect(Object.keys(a).sort()).toEqual([
          'alignment',
          'description',
          'inputSchema',
          'level',
          'name',
          // Every bundled action declares its output schema (the tool interface's `output`).
          'outputSchema',
          ...(contracts.includes('produces') ? ['produces'] : []),
          'providerName',
          'qualifiedName',
          ...(contracts.includes('requires') ? ['requires'] : []),
        ]);
        expect(a.qualifiedName).toBe(`${tool.name as string}/${a.name as string}`);
        expect(a.providerName).toBe(`${tool.name as string}_${a.name as string}`);
        expect(a.providerName).toMatch(PROVIDER_RE);
        expect(typeof a.description).toBe('string');
        expect((a.description as string).length).toBeGreaterThan(0);
        expect([1, 2, 3]).toContain(a.level);
        expect(a.alignment).toBe(a.level === 1 ? 'aligned' : 'agnostic');
        expect((a.inputSchema as Body).type).toBe('object');
      }
    }
    const withContracts = tools.flatMap((x) =>
      (x.actions as Body[]).filter((a) => 'requires' in a || 'produces' in a).map((a) => a.qualifiedName),
    );
    expect(withContracts).toEqual([
      'analytics-tool/summarize-resource',
      'data-tool/create-resource',
      'data-tool/update-resource',
      'export-tool/export-resource',
      'export-tool/write-export',
      'transform-tool/transform-resource',
    ]);
    const declared = Object.fromEntries(
      tools.flatMap((x) => (x.actions as Body[]).map((a) => [a.qualifiedName, a.level])),
    );
    expect(declared).toMatchObject(LEVELS);
  });

  it('inputSchema describes the args (data-tool/create-resource needs name and data)', async () => {
    const res = await request(t.app).get('/tools/data-tool').expect(200);
    const create = (res.body.actions as Body[]).find((a) => a.name === 'create-resource')!;
    const schema = create.inputSchema as { properties?: Record<string, unknown>; required?: string[] };
    expect(Object.keys(schema.properties ?? {})).toEqual(expect.arrayContaining(['name', 'data']));
    expect(schema.required ?? []).toEqual(expect.arrayContaining(['name']));
  });

  it('GET /tools/{name}: 200 with the same Tool as the list, 404 for an unknown one', async () => {
    const list = await request(t.app).get('/tools').expect(200);
    for (const tool of list.body.tools as Body[]) {
      const one = await request(t.app).get(`/tools/${tool.name as string}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(tool);
    }
    expectProblem(await request(t.app).get('/tools/no-such-tool'), 404, 'not_found');
  });
});
