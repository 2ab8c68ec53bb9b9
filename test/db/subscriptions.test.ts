/**
 * Subscriptions (API.md, "Shared context, M6"): tools' handlers for resource
 * events, on a real Postgres through the real app. Tools in a TOOLS_DIR
 * loaded in-process declare handlers that write what they saw; the tests
 * read the results back through REST (and the outbox's table where the
 * claim is about it): after commit, as the tool, in commit order per
 * conversation, under the level gate, retried then listed as failed, a chain
 * cut past depth 8, and each event run exactly once by two replicas.
 */
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { createConversation, expectProblem, mintAgentKey, mintKey } from '../support/identity';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';
import { serverUrl } from '../support/db-server';

/**
 * watcher: appends `name@version` of every `w-*` created or updated to `seen-log` (read, locked, then
 * written: the order of the list is the order the handlers ran in).
 * flaky: always fails on `fail-*`.
 * chain: `chain-N` created → creates `chain-N+1` (each handler's write raises the next event).
 * gated: needs execute (3) to see `gate-*`.
 */
const WATCHER = `module.exports = ({ defineTool, z }) => {
  const noop = { description: 'nothing', level: 1, input: z.object({}), handler: () => ({}) };
  return defineTool({ name: 'watcher', version: '1.0.0', description: 'watches w-*', actions: { noop },
    on: {
      'resource.created': { names: ['w-*'], level: 2, handler: append },
      'resource.updated': { names: ['w-*'], level: 2, handler: append },
    } });
  async function append(event, ctx) {
    const log = await ctx.sharedContext.getResource('seen-log');
    const entry = event.subject.name + '@' + event.subject.version + ':' + event.subject.updatedBy;
    if (log) await ctx.sharedContext.updateResource('seen-log', [...log.data, entry]);
    else await ctx.sharedContext.createResource('seen-log', [entry]);
  }
};`;

const tool = (name: string, on: string): string => `module.exports = ({ defineTool, z, ToolError }) => defineTool({
  name: '${name}', version: '1.0.0', description: '${name}',
  actions: { noop: { description: 'nothing', level: 1, input: z.object({}), handler: () => ({}) } },
  on: ${on},
});`;

const FLAKY = tool(
  'flaky',
  `{ 'resource.created': { names: ['fail-*'], level: 2, handler: () => { throw new ToolError('invalid_args', 'never works'); } } }`,
);
const CHAIN = tool(
  'chain',
  `{ 'resource.created': { names: ['chain-*'], level: 2, handler: async (e, ctx) => {
      const n = Number(e.subject.name.slice(6));
      await ctx.sharedContext.createResource('chain-' + (n + 1), { n: n + 1 });
  } } }`,
);
const GATED = tool(
  'gated',
  `{ 'resource.created': { names: ['gate-*'], level: 3, handler: async (e, ctx) => {
      await ctx.sharedContext.createResource('gated-saw-' + e.subject.name, e.subject);
  } } }`,
);

/** blocker: on `block-*`, reads `lock-row` (locked for the handler's transaction: it waits while a test holds it). */
const BLOCKER = tool(
  'blocker',
  `{ 'resource.created': { names: ['block-*'], level: 2, handler: async (e, ctx) => {
      await ctx.sharedContext.getResource('lock-row');
  } } }`,
);

let toolsDir: ScratchDir;
let a: TestApp;
let b: TestApp;
let admin: { token: string };

const RETRIES = [20, 20, 20, 20, 20];

beforeAll(async () => {
  toolsDir = scratchDir('subscriptions-tools', {
    'watcher.js': WATCHER,
    'flaky.js': FLAKY,
    'chain.js': CHAIN,
    'gated.js': GATED,
    'blocker.js': BLOCKER,
  });
  const env = { TOOLS_DIR: toolsDir.path };
  const options = { registry: { isolateToolsDir: false }, subscriptions: { retryScheduleMs: RETRIES, sweepMs: 20 } };
  a = await createTestApp(env, options);
  b = await createTestApp(env, { ...options, replicaOf: a });
  admin = await mintKey(a.app, 'admin', uniqueId('admin'));
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  toolsDir?.remove();
});

async function conversationWith(levels: Record<string, number>): Promise<{ id: string; token: string }> {
  const alice = await mintKey(a.app, 'user', uniqueId('alice'));
  const id = uniqueId('subs');
  await createConversation(a.app, alice.token, id);
  for (const [t, level] of Object.entries(levels)) {
    await request(a.app, alice.token).put(`/conversations/${id}/permissions/${t}`).send({ level }).expect(200);
  }
  return { id, token: alice.token };
}

async function resource(
  app: TestApp,
  token: string,
  id: string,
  name: string,
): Promise<Record<string, unknown> | undefined> {
  const res = await request(app.app, token).get(`/conversations/${id}/resources/${name}`);
  return res.status === 200 ? (res.body as Record<string, unknown>) : undefined;
}

describe('a handler', () => {
  it('runs after the commit, as its tool, and its write is audited as the tool on behalf of the event', async () => {
    const c = await conversationWith({ watcher: 2 });
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/w-one`).send({ data: 1 }).expect(201);
    await waitFor('the handler wrote', async () => (await resource(a, c.token, c.id, 'seen-log')) !== undefined);
    const log = (await resource(a, c.token, c.id, 'seen-log'))!;
    expect(log).toEqual(
      expect.objectContaining({ data: ['w-one@1:client'], createdBy: 'watcher', updatedBy: 'watcher' }),
    );
    await waitFor('the entry sealed', async () => {
      const res = await request(a.app, c.token).get(`/conversations/${c.id}/audit`).expect(200);
      const entries = (res.body as { entries: Record<string, unknown>[] }).entries;
      return entries.some(
        (e) =>
          e.event === 'subscription.handled' &&
          e.actor === 'tool:watcher' &&
          e.action === 'resource.created' &&
          e.outcome === 'success' &&
          typeof e.requestId === 'string' &&
          e.requestId.startsWith('event:'),
      );
    });
  });

  it('sees the events of one conversation in commit order, each once, though two replicas run them', async () => {
    const c = await conversationWith({ watcher: 2 });
    const N = 24;
    // Concurrent writes through both replicas: their commit order is whatever Postgres makes it.
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        request((i % 2 ? a : b).app, c.token)
          .put(`/conversations/${c.id}/resources/w-${i % 3}`)
          .send({ data: i })
          .expect((res) => expect([200, 201]).toContain(res.status)),
      ),
    );
    await waitFor('every event handled', async () => {
      const log = await resource(a, c.token, c.id, 'seen-log');
      return Array.isArray(log?.data) && log.data.length >= N;
    });
    const seen = (await resource(a, c.token, c.id, 'seen-log'))!.data as string[];
    expect(seen).toHaveLength(N);
    expect(new Set(seen).size).toBe(N);
    // Commit order: the event log's order of this conversation's w-* events.
    const { rows } = await a.db.pool.query<{ s: string }>(
      `SELECT (subject->>'name') || '@' || (subject->>'version') || ':client' AS s FROM events
        WHERE conversation_id = $1 AND type IN ('resource.created', 'resource.updated') AND subject->>'name' LIKE 'w-%'
        ORDER BY id`,
      [c.id],
    );
    expect(seen).toEqual(rows.map((r) => r.s));
    const { rows: deliveries } = await a.db.pool.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM subscription_deliveries WHERE conversation_id = $1',
      [c.id],
    );
    expect(deliveries).toHaveLength(N);
    expect(deliveries.every((d) => d.status === 'done' && d.attempts === 1)).toBe(true);
  });

  it('runs only while its tool has the level it asks for', async () => {
    const c = await conversationWith({ gated: 2, watcher: 2 });
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/gate-low`).send({ data: 1 }).expect(201);
    // In commit order: once watcher has handled the next event, gate-low's was decided, at level 2.
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/w-marker`).send({ data: 1 }).expect(201);
    await waitFor('the marker handled', async () => (await resource(a, c.token, c.id, 'seen-log')) !== undefined);
    await request(a.app, c.token).put(`/conversations/${c.id}/permissions/gated`).send({ level: 3 }).expect(200);
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/gate-high`).send({ data: 1 }).expect(201);
    await waitFor(
      'the handler ran at level 3',
      async () => (await resource(a, c.token, c.id, 'gated-saw-gate-high')) !== undefined,
    );
    expect(await resource(a, c.token, c.id, 'gated-saw-gate-low')).toBeUndefined();
    const saw = (await resource(a, c.token, c.id, 'gated-saw-gate-high'))!;
    expect(saw.data).toEqual(expect.objectContaining({ name: 'gate-high', version: 1, createdBy: 'client' }));
    expect(saw.data).not.toHaveProperty('data');
  });

  // It holds a row lock on a second connection: the embedded database serves one session at a time.
  const onServer = serverUrl() ? it : it.skip;
  onServer('is skipped when its level was lowered after the event, before it ran', async () => {
    const c = await conversationWith({ gated: 3, blocker: 2 });
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/lock-row`).send({ data: 1 }).expect(201);
    const locker = await a.db.pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM resources WHERE conversation_id = $1 AND name = 'lock-row' FOR UPDATE`, [c.id]);
      // blocker's handler waits on the lock: the conversation's next event waits behind it.
      await request(a.app, c.token).put(`/conversations/${c.id}/resources/block-1`).send({ data: 1 }).expect(201);
      await request(a.app, c.token).put(`/conversations/${c.id}/resources/gate-later`).send({ data: 1 }).expect(201);
      await waitFor('the gated delivery queued at level 3', async () => {
        const { rows } = await a.db.pool.query(
          `SELECT 1 FROM subscription_deliveries WHERE conversation_id = $1 AND tool = 'gated' AND status = 'pending'`,
          [c.id],
        );
        return rows.length === 1;
      });
      await request(a.app, c.token).put(`/conversations/${c.id}/permissions/gated`).send({ level: 2 }).expect(200);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    await waitFor('the gated delivery settled', async () => {
      const { rows } = await a.db.pool.query<{ status: string }>(
        `SELECT status FROM subscription_deliveries WHERE conversation_id = $1 AND tool = 'gated'`,
        [c.id],
      );
      return rows[0]?.status !== 'pending';
    });
    const { rows } = await a.db.pool.query<{ status: string }>(
      `SELECT status FROM subscription_deliveries WHERE conversation_id = $1 AND tool = 'gated'`,
      [c.id],
    );
    expect(rows).toEqual([{ status: 'skipped' }]);
    expect(await resource(a, c.token, c.id, 'gated-saw-gate-later')).toBeUndefined();
    // Skipped is not failed.
    await request(a.app, c.token).get(`/conversations/${c.id}/subscriptions/failures`).expect(200, { failures: [] });
  });

  it('is retried 5 times, then listed as failed; the conversation moves on', async () => {
    const c = await conversationWith({ flaky: 2, watcher: 2 });
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/fail-x`).send({ data: 1 }).expect(201);
    await request(a.app, c.token).put(`/conversations/${c.id}/resources/w-after`).send({ data: 1 }).expect(201);
    await waitFor('the later event handled', async () => (await resource(a, c.token, c.id, 'seen-log')) !== undefined);
    const res = await request(a.app, c.token).get(`/conversations/${c.id}/subscriptions/failures`).expect(200);
    expect(res.body).toEqual({
      failures: [
        {
          eventId: expect.any(Number) as number,
          type: 'resource.created',
          tool: 'flaky',
          resource: 'fail-x',
          status: 'failed',
          attempts: 6,
          error: 'invalid_args: never works',
          at: expect.any(Number) as number,
        },
      ],
    });
    // Given up before the next event ran (in order): its delivery settled first.
    const { rows } = await a.db.pool.query<{ tool: string; settled_at: Date }>(
      'SELECT tool, settled_at FROM subscription_deliveries WHERE conversation_id = $1 ORDER BY event_id',
      [c.id],
    );
    expect(rows.map((r) => r.tool)).toEqual(['flaky', 'watcher']);
    expect(rows[0]!.settled_at.getTime()).toBeLessThanOrEqual(rows[1]!.settled_at.getTime());
  });

  it('raises events with its writes; a chain deeper than 8 is cut and listed', async () => {
    const c = await conversationWith({ chain: 2 });
    await request(a.app, c.token)
      .put(`/conversations/${c.id}/resources/chain-0`)
      .send({ data: { n: 0 } })
      .expect(201);
    await waitFor('the cut listed', async () => {
      const res = await request(a.app, c.token).get(`/conversations/${c.id}/subscriptions/failures`).expect(200);
      return (res.body as { failures: unknown[] }).failures.length > 0;
    });
    const res = await request(a.app, c.token).get(`/conversations/${c.id}/subscriptions/failures`).expect(200);
    expect((res.body as { failures: unknown[] }).failures).toEqual([
      expect.objectContaining({ tool: 'chain', resource: 'chain-8', status: 'cut', attempts: 0 }),
    ]);
    const list = await request(a.app, c.token).get(`/conversations/${c.id}/resources`).expect(200);
    const names = (list.body as { resources: { name: string }[] }).resources.map((r) => r.name).sort();
    expect(names).toEqual(Array.from({ length: 9 }, (_, i) => `chain-${i}`).sort());
    expect((await resource(a, c.token, c.id, 'chain-8'))!.createdBy).toBe('chain');
  });
});

describe('GET /conversations/{id}/subscriptions/failures', () => {
  it('is for the owner and admins: an agent 403, a stranger and a missing conversation 404, a bad limit 400', async () => {
    const c = await conversationWith({});
    const agent = await mintAgentKey(a.app, c.token, c.id);
    expectProblem(
      await request(a.app, agent.token).get(`/conversations/${c.id}/subscriptions/failures`),
      403,
      'forbidden',
    );
    const bob = await mintKey(a.app, 'user', uniqueId('bob'));
    expectProblem(
      await request(a.app, bob.token).get(`/conversations/${c.id}/subscriptions/failures`),
      404,
      'not_found',
    );
    expectProblem(
      await request(a.app, admin.token).get(`/conversations/${uniqueId('none')}/subscriptions/failures`),
      404,
      'not_found',
    );
    expectProblem(
      await request(a.app, c.token).get(`/conversations/${c.id}/subscriptions/failures?limit=0`),
      400,
      'validation_failed',
    );
    await request(a.app, admin.token)
      .get(`/conversations/${c.id}/subscriptions/failures`)
      .expect(200, { failures: [] });
  });
});
