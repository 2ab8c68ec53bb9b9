/**
 * Events across replicas: two app instances on one database, each with its
 * own pool, feed and LISTEN connection, as two processes would have. An
 * approval requested on A reaches a stream on B within 1 s of A's answer
 * (the median of a few is printed, the bound is the only timing asserted), a
 * resource change too (found by B's poll), a decision on B reaches A, and an
 * id from A resumes a stream on B (ids are global). On the embedded database
 * (no TEST_DATABASE_URL) there is no LISTEN: approvals too are found by the poll.
 */
import type { Server } from 'node:http';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, createConversation, listen, mintAgentKey, mintKey, stopListening } from '../support/identity';
import { type SseStream, openSse } from '../support/sse';
import { type TestApp, createTestApp } from '../support/test-app';

let a: TestApp;
let b: TestApp;
let servers: Server[] = [];
let baseA: string;
let baseB: string;
let alice: MintedKey;
let agent: MintedKey;
let conv: string;
const open: SseStream[] = [];

beforeAll(async () => {
  a = await createTestApp();
  b = await createTestApp({}, { replicaOf: a });
  const la = await listen(a.app);
  const lb = await listen(b.app);
  servers = [la.server, lb.server];
  baseA = la.base;
  baseB = lb.base;
  alice = await mintKey(baseA, 'user', uniqueId('alice'));
  conv = uniqueId('replicas');
  await createConversation(baseA, alice.token, conv);
  agent = await mintAgentKey(baseA, alice.token, conv);
});

afterAll(async () => {
  for (const s of open) s.close();
  for (const s of servers) await stopListening(s);
  await b?.close();
  await a?.close();
});

async function sse(base: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const s = await openSse(`${base}/events`, { Authorization: `Bearer ${alice.token}`, ...headers });
  expect(s.status).toBe(200);
  open.push(s);
  return s;
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

describe('events across replicas', () => {
  it('an approval requested on A reaches a stream on B within 1 s', async () => {
    const onB = await sse(baseB);
    const latencies: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(baseA, agent.token)
        .post(`/conversations/${conv}/negotiate`)
        .send({ action: 'data-tool/create-resource', args: { name: uniqueId('n'), data: i } });
      // The request is committed before A answers: from the answer on, the event is on its way.
      const answered = performance.now();
      expect(res.body.code).toBe('permission_required');
      const id = res.body.approval.id as string;
      const e = await onB.next((x) => x.data.type === 'approval.requested' && x.data.subject.id === id, 2000);
      latencies.push(Math.max(0, e.receivedAt - answered));
    }
    console.log(
      `approval.requested on A → SSE on B: median ${median(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms (${latencies.length} runs)`,
    );
    expect(Math.max(...latencies)).toBeLessThan(1000);
  });

  it('a resource change on A reaches B within 1 s (by its poll)', async () => {
    const onB = await sse(baseB);
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const name = uniqueId('r');
      await request(baseA, alice.token).put(`/conversations/${conv}/resources/${name}`).send({ data: i }).expect(201);
      const answered = performance.now();
      const e = await onB.next((x) => x.data.subject.name === name, 2000);
      latencies.push(Math.max(0, e.receivedAt - answered));
    }
    console.log(
      `resource.created on A → SSE on B: median ${median(latencies).toFixed(1)} ms (${latencies.length} runs)`,
    );
    expect(Math.max(...latencies)).toBeLessThan(1000);
  });

  it('a decision on B reaches A; an id seen on A resumes on B', async () => {
    const onA = await sse(baseA);
    const res = await request(baseB, agent.token)
      .post(`/conversations/${conv}/negotiate`)
      .send({ action: 'data-tool/create-resource', args: { name: uniqueId('n'), data: 'x' } });
    const id = res.body.approval.id as string;
    const requested = await onA.next((x) => x.data.type === 'approval.requested' && x.data.subject.id === id);
    await request(baseB, alice.token)
      .post(`/conversations/${conv}/approvals/${id}/reject`)
      .send({ reason: 'not now' })
      .expect(200);
    const decided = await onA.next((x) => x.data.type === 'approval.decided' && x.data.subject.id === id, 1000);
    expect(decided.data.subject).toMatchObject({ status: 'rejected', reason: 'not now' });

    const resumed = await sse(baseB, { 'Last-Event-ID': requested.id! });
    const again = await resumed.next((x) => x.data.subject.id === id);
    expect([again.id, again.data]).toEqual([decided.id, decided.data]);
  });
});
