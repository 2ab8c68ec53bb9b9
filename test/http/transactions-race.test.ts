/**
 * Transactions racing over two instances of the app on one database (what two
 * processes are to Postgres): overlapping resources named in random orders
 * never surface a deadlock (every transaction commits, never a 5xx), and no
 * transaction is ever half applied (every resource's version counts exactly
 * the committed transactions that wrote it).
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { serverUrl } from '../support/db-server';
import { uniqueId } from '../support/ids';
import { type PeerApp, createPeerApp } from '../support/peer-app';
import { type TestApp, createTestApp } from '../support/test-app';

const onServer = serverUrl() !== undefined;
const TRANSACTIONS = 100;

let one: TestApp;
let two: PeerApp;

beforeAll(async () => {
  if (!onServer) return;
  one = await createTestApp();
  two = await createPeerApp(one);
});

afterAll(async () => {
  await two?.close();
  await one?.close();
});

type Resource = { name: string; data: unknown; version: number };
type Op = Record<string, unknown>;

/** A small deterministic generator, so a failing run can be repeated. */
function generator(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** `count` distinct names of `names`, in a random order. */
function pick(names: string[], count: number, random: () => number): string[] {
  const pool = [...names];
  const out: string[] = [];
  while (out.length < count) out.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return out;
}

function txn(i: number, conversationId: string, operations: Op[]): supertest.Test {
  // Alternating replicas: half the transactions go through the other instance's pool.
  const app = i % 2 === 0 ? one.app : two.app;
  return request(app).post(`/conversations/${conversationId}/transactions`).send({ operations });
}

async function all(conversationId: string): Promise<Map<string, Resource>> {
  const res = await request(one.app).get(`/conversations/${conversationId}/resources?limit=500`).expect(200);
  return new Map((res.body.resources as Resource[]).map((r) => [r.name, r]));
}

async function seed(conversationId: string, names: string[]): Promise<void> {
  await request(one.app)
    .post(`/conversations/${conversationId}/transactions`)
    .send({ operations: names.map((name) => ({ op: 'create', name, data: { n: 0 } })) })
    .expect(200);
}

(onServer ? describe : describe.skip)('transactions racing over two replicas', () => {
  it('100 transactions updating overlapping resources in random orders all commit, none in part', async () => {
    const id = uniqueId('tx-race');
    const slots = Array.from({ length: 6 }, (_, k) => `slot-${k}`);
    await seed(id, slots);
    const random = generator(23);
    const plans = Array.from({ length: TRANSACTIONS }, () => pick(slots, 2 + Math.floor(random() * 3), random));
    const answers = await Promise.all(
      plans.map((names, i) =>
        txn(i, id, [
          ...names.map((name) => ({ op: 'update', name, data: { by: i } })),
          { op: 'create', name: `mark-${i}`, data: names },
        ]),
      ),
    );
    const statuses = answers.map((res) => `${res.status} ${res.body.code ?? ''}`.trim());
    expect(statuses.filter((s) => s !== '200')).toEqual([]);
    const after = await all(id);
    for (const slot of slots) {
      const writers = plans.filter((names) => names.includes(slot)).length;
      expect([slot, after.get(slot)!.version]).toEqual([slot, 1 + writers]);
      // The last writer of each slot committed its whole transaction: its mark names the slot.
      const last = (after.get(slot)!.data as { by: number }).by;
      expect(after.get(`mark-${last}`)!.data).toContain(slot);
    }
    expect([...after.keys()].filter((name) => name.startsWith('mark-'))).toHaveLength(TRANSACTIONS);
  });

  it('100 read-increment-write transactions (ifMatch) over two replicas: counters equal the committed count', async () => {
    const id = uniqueId('tx-count');
    const counters = Array.from({ length: 12 }, (_, k) => `counter-${k}`);
    await seed(id, counters);
    const random = generator(42);
    const plans = Array.from({ length: TRANSACTIONS }, () => pick(counters, 3, random));
    const unexpected: string[] = [];
    let stale = 0;
    /** Reads its counters, writes each +1 at the version read; a stale read (412) reads again. */
    const increment = async (i: number, names: string[]): Promise<boolean> => {
      for (let attempt = 0; attempt < 300; attempt++) {
        const current = await all(id);
        const res = await txn(i, id, [
          { op: 'create', name: `done-${i}`, data: attempt },
          ...names.map((name) => {
            const { data, version } = current.get(name)!;
            return { op: 'update', name, ifMatch: version, data: { n: (data as { n: number }).n + 1 } };
          }),
        ]);
        if (res.status === 200) return true;
        if (res.status !== 412) unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
        if (res.status !== 412) return false;
        stale++;
      }
      return false;
    };
    // Ten clients at a time, each running its share of the hundred.
    const queue = plans.map((names, i) => ({ names, i }));
    const committed: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          if (await increment(next.i, next.names)) committed.push(next.i);
        }
      }),
    );
    expect(unexpected).toEqual([]);
    expect(committed).toHaveLength(TRANSACTIONS);
    const after = await all(id);
    for (const counter of counters) {
      const count = plans.filter((names) => names.includes(counter)).length;
      const { data, version } = after.get(counter)!;
      expect([counter, data, version]).toEqual([counter, { n: count }, 1 + count]);
    }
    // A stale attempt wrote nothing: its done-i create would otherwise have made the retry a 409.
    expect([...after.keys()].filter((name) => name.startsWith('done-'))).toHaveLength(TRANSACTIONS);
    expect(stale).toBeGreaterThan(0);
  });
});
