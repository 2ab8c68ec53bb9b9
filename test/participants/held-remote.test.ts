/**
 * A participant's action held (API.md, "Held calls"): a call of
 * @modelcontextprotocol/server-everything's get-sum above its level, made
 * with `Prefer: wait=N`, waits for the owner's decision; approved once, it
 * reaches the upstream exactly once (a counting proxy tells) and answers
 * 200 with the upstream's result; the approval is used.
 */
import type { Server } from 'node:http';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, listen, mintKey, stopListening } from '../support/identity';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { CountingProxy } from './support/counting-proxy';
import { type RunningUpstream, startEverythingHttp } from './support/upstreams';

let t: TestApp;
let everything: RunningUpstream;
let proxy: CountingProxy;
let alice: MintedKey;
let server: Server | undefined;
let base: string;
const name = `held-${uniqueId('p')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .slice(-10)}`.replace(/-+$/, '');

beforeAll(async () => {
  everything = await startEverythingHttp();
  proxy = new CountingProxy(new URL(everything.url));
  await proxy.start();
  t = await createTestApp();
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', uniqueId('alice'));
  const res = await request(base)
    .post('/participants')
    .send({ name, transport: 'mcp-http', url: proxy.url, levels: { 'get-sum': 2 } });
  expect(res.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await stopListening(server);
  await t?.close();
  await proxy?.stop();
  await everything?.stop();
});

it('a held call of a participant runs upstream once after a `once` approval', async () => {
  const id = uniqueId('held-remote');
  await request(base, alice.token).post('/conversations').send({ id }).expect(201);
  const answer = new Promise<supertest.Response>((resolve, reject) => {
    void request(base, alice.token)
      .post(`/conversations/${id}/negotiate`)
      .set('Prefer', 'wait=30')
      .send({ action: `${name}/get-sum`, args: { a: 2, b: 3 } })
      .then(resolve, reject);
  });
  await waitFor('the call held', () => t.services.held.size === 1);
  const before = proxy.calls.length;
  const pending = await request(base, alice.token).get(`/conversations/${id}/approvals?status=pending`).expect(200);
  const approvalId = pending.body.approvals[0].id as string;
  await request(base, alice.token)
    .post(`/conversations/${id}/approvals/${approvalId}/approve`)
    .send({ scope: 'once' })
    .expect(200);
  const res = await answer;
  expect(res.status).toBe(200);
  expect(res.headers['preference-applied']).toBe('wait=30');
  expect(JSON.stringify(res.body.output)).toContain('5');
  expect(proxy.calls.slice(before)).toEqual(['get-sum']);
  const a = await request(base, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200);
  expect(a.body.status).toBe('used');
});
