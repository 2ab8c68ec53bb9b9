/**
 * A conversation's policy over HTTP: a deny decides before any permission
 * question, and a stored policy that cannot be read denies every action
 * (fail closed) and says why in the log.
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({}, { captureLogs: true });
});
afterAll(async () => t?.close());

function neg(conversationId: string, body: Record<string, unknown>): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

async function createWithPolicy(deny: string[]): Promise<string> {
  const id = uniqueId('policy');
  await request(t.app).post('/conversations').send({ id, policy: { deny } }).expect(201);
  return id;
}

function expectDenied(res: supertest.Response): void {
  expect({ status: res.status, code: res.body.code, success: res.body.success, alignment: res.body.alignment }).toEqual(
    { status: 403, code: 'denied', success: false, alignment: 'contradiction' },
  );
  expect(res.body.requiresApproval).toBeUndefined();
}

describe('a deny decides before any permission question', () => {
  it('a denied write at level 1 is denied, not permission_required, and nothing is created', async () => {
    const c = await createWithPolicy(['data-tool/create-*']);
    const create = await neg(c, { action: 'data-tool/create-resource', args: { name: 'blocked', data: 1 } });
    expectDenied(create);
    const dry = await neg(c, { action: 'data-tool/create-resource', args: { name: 'blocked', data: 1 }, dryRun: true });
    expectDenied(dry);
    await request(t.app).get(`/conversations/${c}/resources/blocked`).expect(404);
    // The same write on a conversation without that policy asks for a permission instead.
    const other = await neg(uniqueId('policy'), { action: 'data-tool/create-resource', args: { name: 'x', data: 1 } });
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 403, code: 'permission_required' });
  });

  it('a denied read at level 1 is denied', async () => {
    const c = await createWithPolicy(['example-tool/greet']);
    expectDenied(await neg(c, { action: 'example-tool/greet', args: { name: 'ada' } }));
    expectDenied(await neg(c, { action: 'greet', dryRun: true }));
  });
});

describe('a stored policy that cannot be read denies every action', () => {
  it.each([
    ['a string', '"data-tool/*"'],
    ['deny not an array', '{"deny": "data-tool/create-resource"}'],
    ['a pattern of the wrong type', '{"deny": [7]}'],
    ['a pattern that is not a pattern', '{"deny": ["no slash here"]}'],
    ['a pattern too long', `{"deny": ["${'a'.repeat(65)}/*"]}`],
    ['no deny at all', '{}'],
    ['an unknown key', '{"deny": [], "allow": ["*/*"]}'],
    ['null', 'null'],
  ])('%s: a read is 403 denied, also with dryRun, and the reason is logged', async (_label, stored) => {
    const c = await createWithPolicy([]);
    expect((await neg(c, { action: 'example-tool/greet' })).status).toBe(200);
    await t.db.pool.query('UPDATE conversations SET policy = $2::jsonb WHERE id = $1', [c, stored]);

    const res = await neg(c, { action: 'example-tool/greet', args: { name: 'ada' } });
    expectDenied(res);
    expect(res.body.output).toBeUndefined();
    expect(res.body.error).toBe(
      "Action example-tool/greet is denied by this conversation's policy (stored policy unreadable, every action denied)",
    );
    expectDenied(await neg(c, { action: 'example-tool/greet', dryRun: true }));

    const logged = t.logs.filter((l) => l.conversationId === c && l.msg.startsWith('stored policy unreadable'));
    expect(logged.length).toBe(2);
    expect(logged[0]).toMatchObject({ level: 40 });
    expect(String(logged[0]!.problem)).toMatch(/^policy/);
  });

  it('the conversation shows the policy that applies, and lists no tool definitions', async () => {
    const c = await createWithPolicy(['data-tool/*']);
    await t.db.pool.query('UPDATE conversations SET policy = $2::jsonb WHERE id = $1', [c, '{"deny": [null]}']);
    const got = await request(t.app).get(`/conversations/${c}`).expect(200);
    expect(got.body.policy).toEqual({ deny: ['*/*'] });
    const defs = await request(t.app).get('/tools/definitions').query({ format: 'canonical', conversationId: c });
    expect(defs.status).toBe(200);
    expect(defs.body.tools).toEqual([]);
  });
});
