/**
 * Two users racing to create one conversation id (negotiate creates on first
 * use): exactly one owns it, and the other is refused as for any conversation
 * it may not see, never decided as if it were its own. With Postgres the two
 * creating statements really wait on each other (the loser's INSERT … ON
 * CONFLICT returns no row and its snapshot cannot see the winner's): the
 * statement must be read again.
 */
import type { Server } from 'node:http';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, listen, mintKey, stopListening } from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let server: Server | undefined;
let base: string;
let alice: MintedKey;
let bob: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', uniqueId('alice'));
  bob = await mintKey(base, 'user', uniqueId('bob'));
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

it('gives a contested new id to exactly one user; the other gets 404 and nothing runs for it', async () => {
  for (let round = 0; round < 15; round++) {
    const id = uniqueId('contested');
    const call = (token: string, name: string) =>
      request(base, token).post(`/conversations/${id}/negotiate`).send({ action: 'greet', args: { name } });
    const [a, b] = await Promise.all([call(alice.token, 'alice'), call(bob.token, 'bob')]);
    const statuses = [a.status, b.status].sort();
    expect([round, statuses]).toEqual([round, [200, 404]]);
    const winner = a.status === 200 ? alice : bob;
    const loser = a.status === 200 ? b : a;
    expect(loser.body).toMatchObject({ code: 'not_found' });
    const conv = await request(base).get(`/conversations/${id}`);
    expect(conv.body.owner).toBe(winner.subject);
  }
});
