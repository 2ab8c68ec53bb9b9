/**
 * The approvals inbox (API.md, `GET /approvals`) on a real Postgres: a user
 * sees the approvals of the conversations it owns, an admin all of them, an
 * agent none (403); newest first, filtered by status, a page at a time with
 * an opaque cursor; bad input is a 400.
 */
import type { Server } from 'node:http';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type MintedKey,
  createConversation,
  expectProblem,
  listen,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let server: Server | undefined;
let base: string;
let alice: MintedKey;
let bob: MintedKey;
let agent: MintedKey;
let aliceConvs: string[];
let bobConv: string;
/** Alice's approval ids, oldest first. */
const aliceIds: string[] = [];
let bobId: string;

type Approval = { id: string; conversationId: string; status: string; createdAt: number };

/** A refused call of `token` in `conversationId`: the approval it recorded. */
async function refuse(token: string, conversationId: string): Promise<string> {
  const res = await request(base, token)
    .post(`/conversations/${conversationId}/negotiate`)
    .send({ action: 'data-tool/create-resource', args: { name: uniqueId('n'), data: 1 } });
  expect(res.body.code).toBe('permission_required');
  return res.body.approval.id as string;
}

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', uniqueId('alice'));
  bob = await mintKey(base, 'user', uniqueId('bob'));
  aliceConvs = [uniqueId('inbox-a1'), uniqueId('inbox-a2')];
  bobConv = uniqueId('inbox-b');
  for (const c of aliceConvs) await createConversation(base, alice.token, c);
  await createConversation(base, bob.token, bobConv);
  agent = await mintAgentKey(base, alice.token, aliceConvs[0]!);
  // Five of alice's, across her two conversations (the agent's and her own calls), one of bob's.
  for (let i = 0; i < 5; i++) {
    const conv = aliceConvs[i % 2]!;
    aliceIds.push(await refuse(i % 2 === 0 ? agent.token : alice.token, conv));
  }
  bobId = await refuse(bob.token, bobConv);
  // One decided: the status filter tells it apart.
  await request(base, alice.token)
    .post(`/conversations/${aliceConvs[0]}/approvals/${aliceIds[0]}/reject`)
    .send({ reason: 'no' })
    .expect(200);
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

const inbox = (token: string, query = '') => request(base, token).get(`/approvals${query}`);

describe('GET /approvals', () => {
  it("a user sees its conversations' approvals, newest first, as GET …/approvals/{id} shows each", async () => {
    const res = await inbox(alice.token).expect(200);
    const list = res.body.approvals as Approval[];
    expect(list.map((a) => a.id)).toEqual([...aliceIds].reverse());
    expect(res.body.nextCursor).toBeNull();
    const one = await request(base, alice.token).get(`/conversations/${aliceConvs[1]}/approvals/${aliceIds[1]}`);
    expect(list.find((a) => a.id === aliceIds[1])).toEqual(one.body);
    expect((await inbox(bob.token).expect(200)).body.approvals.map((a: Approval) => a.id)).toEqual([bobId]);
  });

  it('an admin sees every conversation’s; an agent has no inbox (403)', async () => {
    const all = (await inbox(TEST_ADMIN_TOKEN, '?limit=500').expect(200)).body.approvals as Approval[];
    const ids = all.map((a) => a.id);
    for (const id of [...aliceIds, bobId]) expect(ids).toContain(id);
    const times = all.map((a) => a.createdAt);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expectProblem(await inbox(agent.token), 403, 'forbidden');
  });

  it('status filters', async () => {
    const pending = (await inbox(alice.token, '?status=pending').expect(200)).body.approvals as Approval[];
    expect(pending.map((a) => a.id)).toEqual(aliceIds.slice(1).reverse());
    const rejected = (await inbox(alice.token, '?status=rejected').expect(200)).body.approvals as Approval[];
    expect(rejected.map((a) => [a.id, a.status])).toEqual([[aliceIds[0], 'rejected']]);
  });

  it('pages with an opaque cursor, each approval once', async () => {
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null) {
      const res = await inbox(alice.token, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`).expect(200);
      seen.push(...(res.body.approvals as Approval[]).map((a) => a.id));
      cursor = res.body.nextCursor as string | null;
      pages++;
    }
    expect(seen).toEqual([...aliceIds].reverse());
    expect(pages).toBe(3);
  });

  it.each([
    ['limit=0'],
    ['limit=501'],
    ['limit=two'],
    ['status=maybe'],
    ['cursor=!!'],
    [`cursor=${Buffer.from('12.x y').toString('base64url')}`],
    [`cursor=${Buffer.from('not-a-cursor').toString('base64url')}`],
  ])('?%s is a 400', async (query) => {
    expectProblem(await inbox(alice.token, `?${query}`), 400, 'validation_failed');
  });
});
