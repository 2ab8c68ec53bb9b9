/**
 * Races over HTTP: concurrent creates of one name, concurrent updates of one
 * resource, conditional REST writes, first use of a conversation by many
 * requests at once, and an action whose writes must commit together.
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';

/** Creates two resources, then fails: neither write may survive. */
const PAIR_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'pair-tool', version: '1.0.0', description: 'Writes two resources in one action',
  actions: {
    'create-pair-then-throw': defineAction({
      description: 'Creates {prefix}-a and {prefix}-b, then throws',
      level: 2,
      input: z.object({ prefix: z.string() }),
      handler: async ({ prefix }, ctx) => {
        await ctx.sharedContext.createResource(prefix + '-a', { part: 'a' });
        await ctx.sharedContext.createResource(prefix + '-b', { part: 'b' });
        throw new Error('failed after two writes');
      },
    }),
    'create-pair-then-collide': defineAction({
      description: 'Creates {prefix}-a, updates {existing}, then creates {existing} again (resource_exists)',
      level: 2,
      input: z.object({ prefix: z.string(), existing: z.string() }),
      handler: async ({ prefix, existing }, ctx) => {
        await ctx.sharedContext.createResource(prefix + '-a', { part: 'a' });
        await ctx.sharedContext.updateResource(existing, 'changed');
        await ctx.sharedContext.createResource(existing, 'again');
        return { unreachable: true };
      },
    }),
    'create-pair': defineAction({
      description: 'Creates {prefix}-a and {prefix}-b',
      level: 2,
      input: z.object({ prefix: z.string() }),
      handler: async ({ prefix }, ctx) => {
        await ctx.sharedContext.createResource(prefix + '-a', { part: 'a' });
        await ctx.sharedContext.createResource(prefix + '-b', { part: 'b' });
        return { created: 2 };
      },
    }),
  },
});
`;

let t: TestApp;
let toolsDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('concurrency-tools', { 'pair-tool.js': PAIR_TOOL });
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'false' });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

type Body = Record<string, unknown>;

function neg(conversationId: string, body: Body): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

function resUrl(conversationId: string, name?: string): string {
  return `/conversations/${conversationId}/resources${name === undefined ? '' : `/${name}`}`;
}

async function setLevel(conversationId: string, tool: string, level: number): Promise<void> {
  const res = await neg(conversationId, { action: `upgrade:${tool}:level-${level}` });
  expect(res.status).toBe(200);
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

describe('negotiate races', () => {
  it('twenty concurrent creates of one name: exactly one 200, nineteen 409 resource_exists', async () => {
    const c = uniqueId('race');
    await setLevel(c, 'data-tool', 2);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        neg(c, { action: 'create-resource', args: { name: 'contested', data: { writer: i } } }),
      ),
    );
    expect(countBy(results, (r) => `${r.status} ${r.body.code ?? 'ok'}`)).toEqual({
      '200 ok': 1,
      '409 resource_exists': 19,
    });
    const winner = results.find((r) => r.status === 200)!;
    const got = await request(t.app).get(resUrl(c, 'contested')).expect(200);
    expect(got.body).toMatchObject({ version: 1, createdBy: 'data-tool', data: winner.body.output.resource.data });
  });

  it('thirty concurrent updates of one resource: thirty 200s with versions 2..31, final version 31', async () => {
    const c = uniqueId('race');
    await setLevel(c, 'data-tool', 2);
    expect((await neg(c, { action: 'create-resource', args: { name: 'counter', data: { writer: -1 } } })).status).toBe(
      200,
    );
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        neg(c, { action: 'update-resource', args: { name: 'counter', data: { writer: i } } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
    const versions = results.map((r) => r.body.output.version as number).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));

    const got = await request(t.app).get(resUrl(c, 'counter')).expect(200);
    expect(got.body.version).toBe(31);
    expect(got.headers.etag).toBe('"31"');
    // The stored data is the data of the write that got version 31.
    const last = results.find((r) => r.body.output.version === 31)!;
    expect(got.body.data).toEqual(last.body.output.data);
  });

  it('twenty concurrent first uses of one new conversation all succeed', async () => {
    const c = uniqueId('first');
    const results = await Promise.all(Array.from({ length: 20 }, () => neg(c, { action: 'greet' })));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect((await request(t.app).get(`/conversations/${c}`)).status).toBe(200);
  });

  it('concurrent upgrades of one tool: every one answers 200 and the history keeps them all', async () => {
    const c = uniqueId('up');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => neg(c, { action: `upgrade:data-tool:level-${(i % 3) + 1}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, () => 200));
    const history = await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200);
    const events = history.body.events as { fromLevel: number; toLevel: number }[];
    expect(events).toHaveLength(10);
    // Serialised: each change starts from where the previous one left the level.
    for (let i = 1; i < events.length; i++) expect(events[i]!.fromLevel).toBe(events[i - 1]!.toLevel);
    const perms = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    const row = (perms.body.tools as { tool: string; level: number }[]).find((p) => p.tool === 'data-tool')!;
    expect(row.level).toBe(events[events.length - 1]!.toLevel);
  });
});

describe('REST races', () => {
  it('twenty concurrent PUT with If-None-Match: * of one name: one 201, nineteen 412', async () => {
    const c = uniqueId('race');
    expect((await request(t.app).post('/conversations').send({ id: c })).status).toBe(201);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(t.app)
          .put(resUrl(c, 'only-once'))
          .set('If-None-Match', '*')
          .send({ data: { writer: i } }),
      ),
    );
    expect(countBy(results, (r) => String(r.status))).toEqual({ '201': 1, '412': 19 });
    for (const r of results.filter((x) => x.status === 412)) expect(r.body.code).toBe('precondition_failed');
    const winner = results.find((r) => r.status === 201)!;
    const got = await request(t.app).get(resUrl(c, 'only-once')).expect(200);
    expect(got.body).toMatchObject({ version: 1, data: winner.body.data });
  });

  it('twenty concurrent PUT with If-None-Match: * on a new conversation: one 201, nineteen 412', async () => {
    const c = uniqueId('first');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(t.app).put(resUrl(c, 'only-once')).set('If-None-Match', '*').send({ data: i }),
      ),
    );
    expect(countBy(results, (r) => String(r.status))).toEqual({ '201': 1, '412': 19 });
  });

  it('ten concurrent PUT with the same If-Match: one 200, nine 412', async () => {
    const c = uniqueId('race');
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 'v1' }).expect(201);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        request(t.app)
          .put(resUrl(c, 'doc'))
          .set('If-Match', '"1"')
          .send({ data: `w${i}` }),
      ),
    );
    expect(countBy(results, (r) => String(r.status))).toEqual({ '200': 1, '412': 9 });
    const winner = results.find((r) => r.status === 200)!;
    const got = await request(t.app).get(resUrl(c, 'doc')).expect(200);
    expect(got.body).toMatchObject({ version: 2, data: winner.body.data });
  });

  it('thirty concurrent unconditional PUTs of one resource: distinct versions 2..31', async () => {
    const c = uniqueId('race');
    await request(t.app).put(resUrl(c, 'doc')).send({ data: 0 }).expect(201);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        request(t.app)
          .put(resUrl(c, 'doc'))
          .send({ data: i + 1 }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
    expect(results.map((r) => r.body.version as number).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 2),
    );
    expect((await request(t.app).get(resUrl(c, 'doc')).expect(200)).body.version).toBe(31);
  });
});

describe('atomicity: one action commits all its writes or none', () => {
  it('a tool that creates two resources and then throws leaves neither', async () => {
    const c = uniqueId('atomic');
    await setLevel(c, 'pair-tool', 2);
    const res = await neg(c, { action: 'create-pair-then-throw', args: { prefix: 'p' } });
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('tool_error');
    expect(JSON.stringify(res.body)).not.toContain('failed after two writes');
    expect((await request(t.app).get(resUrl(c, 'p-a'))).status).toBe(404);
    expect((await request(t.app).get(resUrl(c, 'p-b'))).status).toBe(404);
    expect((await request(t.app).get(resUrl(c)).expect(200)).body.resources).toEqual([]);
  });

  it('a tool whose third write fails with resource_exists keeps neither the create nor the update', async () => {
    const c = uniqueId('atomic');
    await setLevel(c, 'pair-tool', 2);
    await request(t.app).put(resUrl(c, 'existing')).send({ data: 'original' }).expect(201);
    const res = await neg(c, { action: 'create-pair-then-collide', args: { prefix: 'q', existing: 'existing' } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('resource_exists');
    expect((await request(t.app).get(resUrl(c, 'q-a'))).status).toBe(404);
    expect((await request(t.app).get(resUrl(c, 'existing')).expect(200)).body).toMatchObject({
      data: 'original',
      version: 1,
      updatedBy: 'client',
    });
  });

  it('the same writes commit together when the action succeeds', async () => {
    const c = uniqueId('atomic');
    await setLevel(c, 'pair-tool', 2);
    const res = await neg(c, { action: 'create-pair', args: { prefix: 'r' } });
    expect(res.status).toBe(200);
    const list = await request(t.app).get(resUrl(c)).expect(200);
    expect((list.body.resources as Body[]).map((r) => [r.name, r.createdBy])).toEqual([
      ['r-a', 'pair-tool'],
      ['r-b', 'pair-tool'],
    ]);
  });

  it('concurrent failing actions leave nothing behind and do not block successful ones', async () => {
    const c = uniqueId('atomic');
    await setLevel(c, 'pair-tool', 2);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        neg(c, { action: i % 2 === 0 ? 'create-pair-then-throw' : 'create-pair', args: { prefix: `s${i}` } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 500 : 200)));
    const names = ((await request(t.app).get(resUrl(c)).expect(200)).body.resources as Body[]).map((r) => r.name);
    expect(names).toEqual(['s1-a', 's1-b', 's3-a', 's3-b', 's5-a', 's5-b', 's7-a', 's7-b', 's9-a', 's9-b']);
  });
});
