/**
 * The webhooks' durable outbox on a real Postgres (API.md, "Approvals inbox,
 * events and webhooks"): at-least-once across a `kill -9` (the service runs
 * as a real child process, killed while the receiver holds the first attempt
 * open, then started again: the event is still delivered), exactly one
 * delivery per event with two replicas on one database (counted by
 * webhook-id), and a hook failing past its limit is disabled. Every request
 * the receiver gets is verified with the Standard Webhooks library.
 */
import { uniqueId } from '../support/ids';
import { bearer } from '../support/auth';
import { type UrlTestDatabase, createEmptyDatabase, serverUrl } from '../support/db-server';
import { createConversation, listen, mintKey, stopListening, type MintedKey } from '../support/identity';
import { request } from '../support/auth';
import { waitFor } from '../support/poll';
import { scratchDir } from '../support/scratch-dir';
import { type SpawnedServer, startServer } from '../support/spawn-server';
import { type TestApp, createTestApp } from '../support/test-app';
import { type WebhookReceiver, startReceiver, verified } from '../support/webhook-receiver';

let receiver: WebhookReceiver;
const secrets = new Map<string, string>();

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(async () => {
  for (const r of receiver?.received ?? []) expect(() => verified(r, secrets.get(r.path)!)).not.toThrow();
  await receiver?.close();
});

async function json(url: string, method: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...bearer(token) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

// Two processes on one database: the embedded one is a single process's.
const onServer = serverUrl() ? describe : describe.skip;

onServer('kill -9 between the event and its delivery', () => {
  let db: UrlTestDatabase;
  let server: SpawnedServer | undefined;
  const dir = scratchDir('webhooks-kill');

  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
    await db?.close();
    dir.remove();
  });

  it('delivers the event after a restart, with the same webhook-id, signed', async () => {
    db = await createEmptyDatabase();
    // A 3 s timeout: the lease of an attempt cut short by the kill lapses in 7 s.
    const env = { DATABASE_URL: db.url, DATA_DIR: dir.path, WEBHOOK_TIMEOUT_MS: '3000', LOG_LEVEL: 'warn' };
    server = await startServer(env);
    const alice = (await json(`${server.url}/keys`, 'POST', bearer().Authorization.slice(7), {
      role: 'user',
      subject: uniqueId('alice'),
    })) as unknown as MintedKey;
    const conv = uniqueId('kill');
    await json(`${server.url}/conversations`, 'POST', alice.token, { id: conv });
    const path = `/${uniqueId('kill')}`;
    receiver.answer(path, 'hold');
    const hook = await json(`${server.url}/webhooks`, 'POST', alice.token, {
      url: receiver.url(path),
      events: ['resource.created'],
    });
    secrets.set(path, hook.secret as string);
    await json(`${server.url}/conversations/${conv}/resources/note`, 'PUT', alice.token, { data: { n: 1 } });
    // The first attempt arrives and is held open: the process dies before it has an answer.
    await receiver.waitForRequests(path, 1);
    server.child.kill('SIGKILL');
    expect(await server.exited).toBeNull();
    server = await startServer(env);
    const [first, second] = await receiver.waitForRequests(path, 2, 60_000);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(verified(second!, hook.secret as string)).toEqual(
      expect.objectContaining({ type: 'resource.created', conversationId: conv }),
    );
    const log = await json(`${server.url}/webhooks/${hook.id as string}/deliveries`, 'GET', alice.token);
    // Newest first: the second attempt delivered it (the first, cut short, may have been logged as a timeout
    // when the machine was slow to kill the process).
    expect((log.deliveries as unknown[])[0]).toEqual(expect.objectContaining({ attempt: 2, status: 'delivered' }));
  });
});

describe('two replicas on one database', () => {
  let a: TestApp;
  let b: TestApp;
  let baseA: string;
  const servers: Awaited<ReturnType<typeof listen>>['server'][] = [];

  beforeAll(async () => {
    a = await createTestApp({}, { webhooks: { sweepMs: 50 } });
    b = await createTestApp({}, { replicaOf: a, webhooks: { sweepMs: 50 } });
    const la = await listen(a.app);
    servers.push(la.server);
    baseA = la.base;
  });

  afterAll(async () => {
    for (const s of servers) await stopListening(s);
    await b?.close();
    await a?.close();
  });

  it('deliver each event of each hook exactly once (counted by webhook-id)', async () => {
    const alice = await mintKey(baseA, 'user', uniqueId('alice'));
    const conv = uniqueId('replicas');
    await createConversation(baseA, alice.token, conv);
    const paths = [`/${uniqueId('r1')}`, `/${uniqueId('r2')}`, `/${uniqueId('r3')}`];
    for (const path of paths) {
      const res = await request(baseA, alice.token)
        .post('/webhooks')
        .send({ url: receiver.url(path), events: ['resource.created', 'resource.updated'] })
        .expect(201);
      secrets.set(path, (res.body as { secret: string }).secret);
    }
    const EVENTS = 30;
    await Promise.all(
      Array.from({ length: EVENTS }, (_, i) =>
        request(baseA, alice.token)
          .put(`/conversations/${conv}/resources/${i % 2 ? 'odd' : uniqueId('n')}`)
          .send({ data: { i } }),
      ),
    );
    for (const path of paths) await receiver.waitForRequests(path, EVENTS, 30_000);
    // Both replicas were awake for every event; a duplicate would have come by now, with the sweep at 50 ms.
    await waitFor('both outboxes idle', async () => {
      const { rows } = await a.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'delivered'",
      );
      return rows[0]!.n === 0;
    });
    for (const path of paths) {
      const ids = receiver.of(path).map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(EVENTS);
      expect(new Set(ids).size).toBe(EVENTS);
    }
  });
});

describe('a hook failing past its limit', () => {
  let t: TestApp;
  let base: string;
  let server: Awaited<ReturnType<typeof listen>>['server'] | undefined;

  beforeAll(async () => {
    // No grace: the first failure disables the hook.
    t = await createTestApp({}, { webhooks: { sweepMs: 50, retryScheduleMs: [50], disableAfterMs: 0 } });
    ({ server, base } = await listen(t.app));
  });

  afterAll(async () => {
    await stopListening(server);
    await t?.close();
  });

  it('is disabled, and gets nothing more', async () => {
    const alice = await mintKey(base, 'user', uniqueId('alice'));
    const conv = uniqueId('disabled');
    await createConversation(base, alice.token, conv);
    const failing = `/${uniqueId('failing')}`;
    const control = `/${uniqueId('control')}`;
    receiver.answer(failing, 500);
    const hooks: Record<string, string> = {};
    for (const path of [failing, control]) {
      const res = await request(base, alice.token)
        .post('/webhooks')
        .send({ url: receiver.url(path), events: ['resource.created'] })
        .expect(201);
      secrets.set(path, (res.body as { secret: string }).secret);
      hooks[path] = (res.body as { id: string }).id;
    }
    await request(base, alice.token).put(`/conversations/${conv}/resources/a`).send({ data: 1 }).expect(201);
    await receiver.waitForRequests(failing, 1);
    await waitFor('the failing hook disabled', async () => {
      const res = await request(base, alice.token).get('/webhooks').expect(200);
      const hook = (res.body as { webhooks: { id: string; enabled: boolean }[] }).webhooks.find(
        (h) => h.id === hooks[failing],
      );
      return hook?.enabled === false;
    });
    await request(base, alice.token).put(`/conversations/${conv}/resources/b`).send({ data: 1 }).expect(201);
    // The control hook's second message comes from the same round that would have made the failing one's.
    await receiver.waitForRequests(control, 2);
    expect(receiver.of(failing)).toHaveLength(1);
    const { rows } = await t.db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1',
      [hooks[failing]],
    );
    expect(rows[0]!.n).toBe(1);
  });
});
