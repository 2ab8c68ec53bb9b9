/**
 * The event streams (API.md, "Approvals inbox, events and webhooks") over
 * real HTTP on a real Postgres: who may open which stream (per role, as the
 * identity tests do), what each one sees and never sees, the order of a
 * conversation's events, Last-Event-ID resumes (also past the retention),
 * the per-principal bound, and the cleanup of a client that went away.
 */
import type { Server } from 'node:http';
import { request } from '../support/auth';
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
import { waitFor } from '../support/poll';
import { type SseEvent, type SseStream, openSse, refusal } from '../support/sse';
import { type TestApp, createTestApp } from '../support/test-app';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { eventStreamsOf } from '../../src/http/event-stream';

let t: TestApp;
let server: Server | undefined;
let base: string;
let alice: MintedKey;
let bob: MintedKey;
let aliceConv: string;
let bobConv: string;
let agentA: MintedKey;
let agentB: MintedKey;
const open: SseStream[] = [];

beforeAll(async () => {
  t = await createTestApp({ EVENTS_MAX_STREAMS_PER_PRINCIPAL: '3' });
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', uniqueId('alice'));
  bob = await mintKey(base, 'user', uniqueId('bob'));
  aliceConv = uniqueId('ev-alice');
  bobConv = uniqueId('ev-bob');
  await createConversation(base, alice.token, aliceConv);
  await createConversation(base, bob.token, bobConv);
  agentA = await mintAgentKey(base, alice.token, aliceConv);
  agentB = await mintAgentKey(base, bob.token, bobConv);
});

afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

async function sse(path: string, token: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const s = await openSse(`${base}${path}`, { Authorization: `Bearer ${token}`, ...headers });
  open.push(s);
  return s;
}

function put(token: string, conversationId: string, name: string, data: unknown) {
  return request(base, token).put(`/conversations/${conversationId}/resources/${name}`).send({ data });
}

const isResource = (name: string) => (e: SseEvent) =>
  e.data.type.startsWith('resource.') && e.data.subject.name === name;

describe('who may open which stream', () => {
  it.each([
    ['admin', 200, () => TEST_ADMIN_TOKEN],
    ['a user', 200, () => alice.token],
    ['an agent', 403, () => agentA.token],
  ])('GET /events as %s: %i', async (_who, status, token) => {
    const s = await sse('/events', token());
    expect(s.status).toBe(status);
    if (status === 200) {
      expect(s.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(s.headers['cache-control']).toBe('no-store');
    } else {
      expect(s.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect((await refusal(s)).code).toBe('forbidden');
    }
  });

  it.each([
    ['admin', 200, () => TEST_ADMIN_TOKEN],
    ['its owner', 200, () => alice.token],
    ['another user', 404, () => bob.token],
    ['its agent', 200, () => agentA.token],
    ["another conversation's agent", 404, () => agentB.token],
  ])('GET /conversations/{id}/events as %s: %i', async (_who, status, token) => {
    const s = await sse(`/conversations/${aliceConv}/events`, token());
    expect(s.status).toBe(status);
    if (status === 404) expect((await refusal(s)).code).toBe('not_found');
  });

  it('a conversation that does not exist is 404 for admins too; no token is 401', async () => {
    const missing = await sse(`/conversations/${uniqueId('none')}/events`, TEST_ADMIN_TOKEN);
    expect([missing.status, (await refusal(missing)).code]).toEqual([404, 'not_found']);
    const anonymous = await openSse(`${base}/events`, {});
    open.push(anonymous);
    expect(anonymous.status).toBe(401);
  });

  it('a Last-Event-ID that is no event id is a 400', async () => {
    const res = await request(base, alice.token).get('/events').set('Last-Event-ID', 'abc');
    expectProblem(res, 400, 'validation_failed');
  });

  it('HEAD answers the headers and ends', async () => {
    const res = await request(base, alice.token).head('/events');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  });
});

describe('what each stream sees', () => {
  it('a change reaches the owner, admins and its agent, never another user or agent', async () => {
    const streams = {
      owner: await sse('/events', alice.token),
      admin: await sse('/events', TEST_ADMIN_TOKEN),
      agent: await sse(`/conversations/${aliceConv}/events`, agentA.token),
      otherUser: await sse('/events', bob.token),
      otherAgent: await sse(`/conversations/${bobConv}/events`, agentB.token),
    };
    const name = uniqueId('doc');
    await put(alice.token, aliceConv, name, { v: 1 }).expect(201);
    for (const s of [streams.owner, streams.admin, streams.agent]) {
      const e = await s.next(isResource(name));
      expect(e.event).toBe('resource.created');
      expect(e.data).toEqual({
        type: 'resource.created',
        conversationId: aliceConv,
        at: expect.any(Number),
        subject: expect.objectContaining({ name, version: 1, createdBy: 'client', updatedBy: 'client' }),
      });
      expect(e.data.subject).not.toHaveProperty('data');
    }
    // The others' first event is their own conversation's: alice's never came before it.
    const mine = uniqueId('bobs');
    await put(bob.token, bobConv, mine, 1).expect(201);
    for (const s of [streams.otherUser, streams.otherAgent]) {
      const first = await s.next();
      expect([first.data.conversationId, first.data.subject.name]).toEqual([bobConv, mine]);
    }
    expect(streams.owner.events.some((e) => e.data.conversationId === bobConv)).toBe(false);
  });

  it('approvals and permission changes: requested, decided, permission.changed, with the API shapes', async () => {
    const owner = await sse(`/conversations/${aliceConv}/events`, alice.token);
    const refused = await request(base, agentA.token)
      .post(`/conversations/${aliceConv}/negotiate`)
      .send({ action: 'data-tool/create-resource', args: { name: uniqueId('n'), data: 1 } });
    expect(refused.body.code).toBe('permission_required');
    const id = refused.body.approval.id as string;
    const requested = await owner.next((e) => e.data.type === 'approval.requested' && e.data.subject.id === id);
    const approval = (await request(base, alice.token).get(`/conversations/${aliceConv}/approvals/${id}`).expect(200))
      .body as Record<string, unknown>;
    expect(requested.data.subject).toEqual(approval);

    await request(base, alice.token)
      .post(`/conversations/${aliceConv}/approvals/${id}/approve`)
      .send({ scope: 'conversation' })
      .expect(200);
    const decided = await owner.next((e) => e.data.type === 'approval.decided');
    expect(decided.data.subject).toMatchObject({ id, status: 'approved', scope: 'conversation' });
    const changed = owner.events.find((e) => e.data.type === 'permission.changed');
    expect(changed?.data.subject).toEqual({
      tool: 'data-tool',
      fromLevel: 1,
      toLevel: 2,
      at: expect.any(Number),
      actor: `user:${alice.subject}`,
    });
    // The level change commits with the decision: its event comes first.
    expect(Number(changed!.id)).toBeLessThan(Number(decided.id));
  });

  it("a conversation's events arrive in commit order, with increasing ids", async () => {
    const s = await sse(`/conversations/${aliceConv}/events`, alice.token);
    const name = uniqueId('ordered');
    for (let v = 1; v <= 6; v++) await put(alice.token, aliceConv, name, v).expect(v === 1 ? 201 : 200);
    await request(base, alice.token).delete(`/conversations/${aliceConv}/resources/${name}`).expect(204);
    const got: SseEvent[] = [];
    for (let i = 0; i < 7; i++) got.push(await s.next(isResource(name)));
    expect(got.map((e) => [e.data.type, e.data.subject.version])).toEqual([
      ['resource.created', 1],
      ['resource.updated', 2],
      ['resource.updated', 3],
      ['resource.updated', 4],
      ['resource.updated', 5],
      ['resource.updated', 6],
      ['resource.deleted', 6],
    ]);
    const ids = got.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });
  it('a lapsed request is approval.expired, once a replica sweeps it', async () => {
    const sweeping = await createTestApp({ APPROVAL_TTL_SECONDS: '1' }, { replicaOf: t, sweepApprovals: true });
    try {
      // A conversation of its own: the test before raised data-tool's level in alice's.
      const lapsing = uniqueId('lapsing');
      await createConversation(base, alice.token, lapsing);
      const owner = await sse(`/conversations/${lapsing}/events`, alice.token);
      const refused = await request(sweeping.app, alice.token)
        .post(`/conversations/${lapsing}/negotiate`)
        .send({ action: 'data-tool/update-resource', args: { name: uniqueId('n'), data: 1 } });
      const id = refused.body.approval.id as string;
      const expired = await owner.next((e) => e.data.type === 'approval.expired' && e.data.subject.id === id, 10_000);
      expect(expired.data.subject).toMatchObject({ id, status: 'expired' });
    } finally {
      await sweeping.close();
    }
  });

  it('deleting a conversation raises no resource.deleted for each of its resources', async () => {
    const admin = await sse('/events', TEST_ADMIN_TOKEN);
    const gone = uniqueId('gone');
    await createConversation(base, alice.token, gone);
    await put(alice.token, gone, 'a', 1).expect(201);
    await put(alice.token, gone, 'b', 1).expect(201);
    await request(base, alice.token).delete(`/conversations/${gone}`).expect(204);
    const marker = uniqueId('marker');
    await put(alice.token, aliceConv, marker, 1).expect(201);
    await admin.next(isResource(marker));
    const ofGone = admin.events.filter((e) => e.data.conversationId === gone).map((e) => e.data.type);
    expect(ofGone).toEqual(['resource.created', 'resource.created']);
  });
});

describe('resuming with Last-Event-ID', () => {
  it('replays exactly what came after, then goes on live', async () => {
    const first = await sse('/events', alice.token);
    const name = uniqueId('resume');
    await put(alice.token, aliceConv, name, 1).expect(201);
    const seen = await first.next(isResource(name));
    first.close();
    await put(alice.token, aliceConv, name, 2).expect(200);
    await put(alice.token, aliceConv, name, 3).expect(200);
    // Bob's change in between is not alice's to see, replayed or not.
    await put(bob.token, bobConv, uniqueId('hidden'), 1).expect(201);

    const again = await sse('/events', alice.token, { 'Last-Event-ID': seen.id! });
    const replayed = [await again.next(isResource(name)), await again.next(isResource(name))];
    expect(replayed.map((e) => e.data.subject.version)).toEqual([2, 3]);
    await put(alice.token, aliceConv, name, 4).expect(200);
    expect((await again.next(isResource(name))).data.subject.version).toBe(4);
    expect(again.events.every((e) => Number(e.id) > Number(seen.id))).toBe(true);
    expect(again.events.some((e) => e.data.conversationId === bobConv)).toBe(false);
  });
  it("an ownerless (M4) conversation's events are admins' alone, replayed or live", async () => {
    const m4 = uniqueId('m4');
    // As the M4 migration left them: no owner, reached by admins only.
    await t.db.pool.query('INSERT INTO conversations (id) VALUES ($1)', [m4]);
    const name = uniqueId('legacy');
    const start = await sse('/events', TEST_ADMIN_TOKEN);
    await put(TEST_ADMIN_TOKEN, m4, name, 1).expect(201);
    const seen = await start.next(isResource(name));
    const from = String(Number(seen.id) - 1);
    const user = await sse('/events', alice.token, { 'Last-Event-ID': from });
    const admin = await sse('/events', TEST_ADMIN_TOKEN, { 'Last-Event-ID': from });
    expect((await admin.next(isResource(name))).id).toBe(seen.id);
    const mine = uniqueId('after');
    await put(alice.token, aliceConv, mine, 1).expect(201);
    expect((await user.next()).data.subject.name).toBe(mine);
  });
});

describe('open streams', () => {
  it('a client that goes away is forgotten; the per-principal bound answers 429', async () => {
    const streams = eventStreamsOf(t.services);
    // The streams of the tests before are closed (afterEach): the server notices a moment later.
    await waitFor('no stream open', () => streams.size === 0 && t.services.events.size === 0);
    const before = 0;
    const feedBefore = 0;
    const held = [await sse('/events', bob.token), await sse('/events', bob.token), await sse('/events', bob.token)];
    expect(held.map((s) => s.status)).toEqual([200, 200, 200]);
    await waitFor('three streams held', () => t.services.events.size === feedBefore + 3);
    const fourth = await sse('/events', bob.token);
    expect([fourth.status, (await refusal(fourth)).code]).toEqual([429, 'rate_limited']);
    for (const s of held) s.close();
    await waitFor('the streams forgotten', () => streams.size === before && t.services.events.size === feedBefore);
    expect((await sse('/events', bob.token)).status).toBe(200);
  });

  it("a revoked agent key's stream ends", async () => {
    const agent = await mintAgentKey(base, alice.token, aliceConv);
    const s = await sse(`/conversations/${aliceConv}/events`, agent.token);
    expect(s.status).toBe(200);
    await request(base, alice.token).delete(`/keys/${agent.id}`).expect(204);
    await s.ended;
  });
});

describe('retention', () => {
  it('a resume from before the purged events starts at the oldest kept and says so', async () => {
    const name = uniqueId('kept');
    await put(alice.token, aliceConv, name, 1).expect(201);
    const s0 = await sse('/events', alice.token, { 'Last-Event-ID': '0' });
    await s0.next(isResource(name));
    s0.close();
    // Everything so far is past a retention of zero.
    await t.db.pool.query("SELECT events_purge(interval '0 seconds')");
    await put(alice.token, aliceConv, name, 2).expect(200);
    const s = await sse('/events', alice.token, { 'Last-Event-ID': '0' });
    const e = await s.next(isResource(name));
    expect(e.data.subject.version).toBe(2);
    expect(s.comments.join('\n')).toMatch(/EVENTS_RETENTION_HOURS/);
  });
});
