/**
 * What an outside tester found and the fixes keep fixed: admin.key is never
 * overwritten (it may be another database's only admin token); expiry times
 * a timestamp cannot hold are 400s, not 500s; a user may not take the
 * built-in admin's subject; deleting a conversation refuses its agent keys
 * at once on this replica; only bearer credentials earn
 * error="invalid_token"; an agent's definitions leave out what is above its
 * ceiling.
 */
import { readFileSync, readdirSync } from 'node:fs';
import pino from 'pino';
import { bootstrapAdminKey } from '../../src/auth/bootstrap-admin';
import { TEST_ADMIN_TOKEN, anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { mintAgentKey, mintKey } from '../support/identity';
import { scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t?.close();
});

it('never overwrites an existing admin.key: a second first admin goes to admin-2.key', async () => {
  const dir = scratchDir('admin-key-twice', { 'admin.key': 'another database admin token\n' });
  try {
    const logger = pino({ level: 'silent' });
    const file = await bootstrapAdminKey(t.services.stores.keys, { adminApiKey: undefined, dataDir: dir.path }, logger);
    expect(file).toBe(dir.file('admin-2.key'));
    expect(readFileSync(dir.file('admin.key'), 'utf8')).toBe('another database admin token\n');
    expect(readdirSync(dir.path).sort()).toEqual(['admin-2.key', 'admin.key']);
    const token = readFileSync(file!, 'utf8').trim();
    expect((await request(t.app, token).get('/me').expect(200)).body.role).toBe('admin');
  } finally {
    dir.remove();
  }
});

it.each([9000000000000000, 8640000000000001, 1e20, 1.5, Date.now() - 1000])(
  'expiresAt %p is a 400, on both kinds of key',
  async (expiresAt) => {
    const a = await request(t.app)
      .post('/keys')
      .send({ role: 'user', subject: uniqueId('u'), expiresAt });
    expect([a.status, a.body.code]).toEqual([400, 'validation_failed']);
    const id = uniqueId('conv');
    await request(t.app).post('/conversations').send({ id }).expect(201);
    const b = await request(t.app).post(`/conversations/${id}/agent-keys`).send({ expiresAt });
    expect([b.status, b.body.code]).toEqual([400, 'validation_failed']);
  },
);

it("refuses a user named like the built-in admin (it would own the admin's conversations)", async () => {
  const res = await request(t.app).post('/keys').send({ role: 'user', subject: 'admin' });
  expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
  expect(res.body.detail).toContain('built-in admin');
  await request(t.app).post('/keys').send({ role: 'admin', subject: 'admin' }).expect(201);
});

it('deleting a conversation refuses its agent keys at once, before a new one with its id could be entered', async () => {
  const owner = await mintKey(t.app, 'user', uniqueId('owner'));
  const id = uniqueId('conv');
  await request(t.app, owner.token).post('/conversations').send({ id }).expect(201);
  const agent = await mintAgentKey(t.app, owner.token, id);
  await request(t.app, agent.token).get('/me').expect(200);
  await request(t.app, owner.token).delete(`/conversations/${id}`).expect(204);
  await request(t.app, agent.token).get('/me').expect(401);
  await request(t.app, owner.token).post('/conversations').send({ id }).expect(201);
  await request(t.app, agent.token).post(`/conversations/${id}/negotiate`).send({ action: 'greet' }).expect(401);
});

it('answers error="invalid_token" only to bearer credentials', async () => {
  const basic = await anonymous(t.app).get('/me').set('Authorization', 'Basic dXNlcjpwYXNz');
  expect(basic.status).toBe(401);
  expect(basic.headers['www-authenticate']).toMatch(/^Bearer /);
  expect(basic.headers['www-authenticate']).not.toContain('invalid_token');
  const bad = await anonymous(t.app).get('/me').set('Authorization', 'Bearer tgw_nope');
  expect(bad.headers['www-authenticate']).toContain('error="invalid_token"');
  const none = await anonymous(t.app).get('/me');
  expect(none.headers['www-authenticate']).not.toContain('invalid_token');
});

it("gives an agent with maxLevel 1 only level-1 definitions, like MCP's tools/list", async () => {
  const id = uniqueId('conv');
  await request(t.app).post('/conversations').send({ id }).expect(201);
  const agent = await mintAgentKey(t.app, TEST_ADMIN_TOKEN, id, { maxLevel: 1 });
  const mine = await request(t.app, agent.token).get(`/tools/definitions?format=mcp&conversationId=${id}`).expect(200);
  const all = await request(t.app).get(`/tools/definitions?format=mcp&conversationId=${id}`).expect(200);
  const names = (r: { body: { tools: { name: string; annotations: { readOnlyHint: boolean } }[] } }) =>
    r.body.tools.map((d) => d.name);
  expect(names(all).length).toBeGreaterThan(names(mine).length);
  expect(
    (mine.body as { tools: { annotations: { readOnlyHint: boolean } }[] }).tools.every(
      (d) => d.annotations.readOnlyHint,
    ),
  ).toBe(true);
});
