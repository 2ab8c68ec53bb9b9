/**
 * Transactions (API.md, "Shared context, M6"): POST …/transactions, the
 * shared context's `transaction` through negotiate (`data-tool/apply-batch`)
 * and from a TOOLS_DIR tool in its worker. All operations commit or none
 * does; a failure names its operation; one audit entry per committed one.
 */
import type { Server } from 'node:http';
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { type MintedKey, as, listen, mintAgentKey, mintKey, stopListening } from '../support/identity';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

const RESOURCE_MAX_BYTES = 1024;

/**
 * A TOOLS_DIR tool (run in a worker): writes a resource of its own, then a
 * transaction; with `swallow` it catches the transaction's failure and returns.
 */
const BATCH_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'batch-tool', version: '1.0.0', description: 'Writes a marker, then a transaction',
  actions: {
    'mark-then-batch': defineAction({ description: 'Creates marker, then applies operations', level: 2,
      input: z.object({ marker: z.string(), operations: z.array(z.any()), swallow: z.boolean().default(false) }),
      handler: async ({ marker, operations, swallow }, ctx) => {
        await ctx.sharedContext.createResource(marker, { marked: true });
        try {
          return { results: await ctx.sharedContext.transaction(operations) };
        } catch (err) {
          if (!swallow) throw err;
          return { caught: { code: err.code, index: err.index, message: err.message } };
        }
      } }),
  },
});
`;

let t: TestApp;
let server: Server | undefined;
let base: string;
let toolsDir: ScratchDir;
let owner: MintedKey;
let stranger: MintedKey;

beforeAll(async () => {
  toolsDir = scratchDir('transactions-tools', { 'batch-tool.js': BATCH_TOOL });
  t = await createTestApp({
    RESOURCE_MAX_BYTES: String(RESOURCE_MAX_BYTES),
    TOOLS_DIR: toolsDir.path,
    TOOLS_HOT_RELOAD: 'false',
  });
  ({ server, base } = await listen(t.app));
  owner = await mintKey(base, 'user', uniqueId('tx-owner'));
  stranger = await mintKey(base, 'user', uniqueId('tx-stranger'));
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
  toolsDir?.remove();
});

type Body = Record<string, unknown>;
type Op = Record<string, unknown>;

function txn(conversationId: string, operations: unknown, token = owner.token): supertest.Test {
  return as(base, token).post(`/conversations/${conversationId}/transactions`).send({ operations });
}

function put(conversationId: string, name: string, data: unknown): supertest.Test {
  return as(base, owner.token).put(`/conversations/${conversationId}/resources/${name}`).send({ data });
}

async function resources(conversationId: string): Promise<Body[]> {
  const res = await as(base, owner.token).get(`/conversations/${conversationId}/resources`).expect(200);
  return (res.body as { resources: Body[] }).resources;
}

/** Name → [version, data] of every resource: what a failed transaction must leave as it was. */
async function snapshot(conversationId: string): Promise<Record<string, [unknown, unknown]>> {
  return Object.fromEntries((await resources(conversationId)).map((r) => [r.name, [r.version, r.data]]));
}

function expectOperationProblem(res: supertest.Response, status: number, code: string, index: number): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.errors).toEqual([{ path: `/operations/${index}`, message: expect.any(String) }]);
  expect(res.body.detail).toMatch(new RegExp(`^operations/${index}: `));
}

/** A conversation with a=1 (v1), b=2 (v2), c=3 (v1), owned by `owner`. */
async function seeded(): Promise<string> {
  const id = uniqueId('tx');
  await put(id, 'a', 1).expect(201);
  await put(id, 'b', 0).expect(201);
  await put(id, 'b', 2).expect(200);
  await put(id, 'c', 3).expect(201);
  return id;
}

async function auditOf(conversationId: string): Promise<Body[]> {
  const res = await as(base, owner.token).get(`/conversations/${conversationId}/audit?limit=500`).expect(200);
  return (res.body as { entries: Body[] }).entries;
}

describe('POST /conversations/{id}/transactions', () => {
  it('applies create, update, delete and check in order and returns one result each', async () => {
    const id = await seeded();
    const res = await txn(id, [
      { op: 'create', name: 'd', data: { fresh: true } },
      { op: 'update', name: 'b', data: 20, ifMatch: 2 },
      { op: 'delete', name: 'c', ifMatch: 1 },
      { op: 'check', name: 'a', ifMatch: 1 },
      { op: 'update', name: 'd', data: { fresh: false } },
    ]).expect(200);
    const results = res.body.results as (Body | null)[];
    expect(results).toHaveLength(5);
    expect(results[0]).toMatchObject({ name: 'd', data: { fresh: true }, version: 1, createdBy: 'client' });
    expect(results[1]).toMatchObject({ name: 'b', data: 20, version: 3, updatedBy: 'client' });
    expect(results[2]).toBeNull();
    expect(results[3]).toMatchObject({ name: 'a', data: 1, version: 1 });
    expect(results[4]).toMatchObject({ name: 'd', data: { fresh: false }, version: 2 });
    expect(await snapshot(id)).toEqual({ a: [1, 1], b: [3, 20], d: [2, { fresh: false }] });
  });

  it('creates the conversation on first use, as PUT does', async () => {
    const id = uniqueId('tx-new');
    await txn(id, [{ op: 'create', name: 'first', data: [1] }]).expect(200);
    expect(await snapshot(id)).toEqual({ first: [1, [1]] });
  });

  const failures: [string, Op[], number, string, number][] = [
    ['create of an existing name', [{ op: 'create', name: 'a', data: 9 }], 409, 'conflict', 0],
    ['update of a missing name', [{ op: 'update', name: 'zz', data: 9 }], 404, 'not_found', 0],
    ['delete of a missing name', [{ op: 'delete', name: 'zz' }], 404, 'not_found', 0],
    ['check of a missing name', [{ op: 'check', name: 'zz' }], 404, 'not_found', 0],
    ['update at a stale ifMatch', [{ op: 'update', name: 'b', data: 9, ifMatch: 1 }], 412, 'precondition_failed', 0],
    ['delete at a stale ifMatch', [{ op: 'delete', name: 'b', ifMatch: 1 }], 412, 'precondition_failed', 0],
    ['check at a stale ifMatch', [{ op: 'check', name: 'b', ifMatch: 1 }], 412, 'precondition_failed', 0],
    [
      'oversized data',
      [{ op: 'update', name: 'a', data: 'x'.repeat(RESOURCE_MAX_BYTES) }],
      413,
      'payload_too_large',
      0,
    ],
    ['create without data', [{ op: 'create', name: 'new' }], 400, 'validation_failed', 0],
    ['data on a delete', [{ op: 'delete', name: 'a', data: 1 }], 400, 'validation_failed', 0],
    ['ifMatch on a create', [{ op: 'create', name: 'new', data: 1, ifMatch: 1 }], 400, 'validation_failed', 0],
  ];

  it.each(failures)(
    '%s: its status, its index, and nothing written by the operations before it',
    async (_what, failing, status, code) => {
      const id = await seeded();
      const before = await snapshot(id);
      const ops: Op[] = [
        { op: 'update', name: 'a', data: 'changed' },
        { op: 'create', name: 'made', data: 'new' },
        { op: 'delete', name: 'c' },
        ...failing,
        { op: 'create', name: 'after', data: 1 },
      ];
      const res = await txn(id, ops);
      expectOperationProblem(res, status, code, 3);
      expect(await snapshot(id)).toEqual(before);
    },
  );

  it('sees its own earlier operations: a create then a check at version 1; a delete then a check fails', async () => {
    const id = await seeded();
    await txn(id, [
      { op: 'create', name: 'n', data: 1 },
      { op: 'check', name: 'n', ifMatch: 1 },
    ]).expect(200);
    const before = await snapshot(id);
    const res = await txn(id, [
      { op: 'delete', name: 'n' },
      { op: 'check', name: 'n' },
    ]);
    expectOperationProblem(res, 404, 'not_found', 1);
    expect(await snapshot(id)).toEqual(before);
  });

  it('a malformed body is a 400 validation_failed, nothing written', async () => {
    const id = await seeded();
    const before = await snapshot(id);
    for (const operations of [
      [],
      Array.from({ length: 101 }, (_, i) => ({ op: 'check', name: `n${i}` })),
      [{ op: 'upsert', name: 'a', data: 1 }],
      [{ op: 'create', name: 'bad/name', data: 1 }],
      [{ op: 'update', name: 'a', data: 1, ifMatch: 0 }],
      [{ op: 'create', name: 'x', data: 1, ttlSeconds: 31_536_001 }],
      'not a list',
    ]) {
      const res = await txn(id, operations);
      expect([res.status, res.body.code, JSON.stringify(operations).slice(0, 60)]).toEqual([
        400,
        'validation_failed',
        JSON.stringify(operations).slice(0, 60),
      ]);
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    expect(await snapshot(id)).toEqual(before);
  });

  it('ttlSeconds per operation: expiresAt on what it writes; an update without it clears the expiry', async () => {
    const id = await seeded();
    const before = Date.now();
    const res = await txn(id, [
      { op: 'create', name: 'short', data: 1, ttlSeconds: 60 },
      { op: 'update', name: 'a', data: 2, ttlSeconds: 3600 },
      { op: 'update', name: 'b', data: 3 },
    ]).expect(200);
    const [short, a, b] = res.body.results as Body[];
    expect(short!.expiresAt).toBeGreaterThanOrEqual(before + 55_000);
    expect(short!.expiresAt).toBeLessThanOrEqual(Date.now() + 65_000);
    expect(a!.expiresAt).toBeGreaterThanOrEqual(before + 3_595_000);
    expect(b!.expiresAt).toBeUndefined();
    const cleared = await txn(id, [{ op: 'update', name: 'short', data: 4 }]).expect(200);
    expect(cleared.body.results[0].expiresAt).toBeUndefined();
    const read = await as(base, owner.token).get(`/conversations/${id}/resources/a`).expect(200);
    expect(read.body.expiresAt).toBe(a!.expiresAt);
  });

  it('a malformed operation is named as /operations/K, its field first in the message', async () => {
    const id = await seeded();
    const cases: [Op, string][] = [
      [{ op: 'upsert', name: 'a', data: 1 }, 'op: must be one of create, update, delete, check'],
      [{ op: 'update', name: 'a', data: 1, ifMatch: 0 }, 'ifMatch: must be an integer version, at least 1'],
      [{ op: 'create', name: 'a' }, 'data: Required: the resource data (any JSON value)'],
    ];
    for (const [bad, message] of cases) {
      const res = await txn(id, [{ op: 'check', name: 'a' }, bad]);
      expect([res.status, res.body.errors]).toEqual([400, [{ path: '/operations/1', message }]]);
    }
  });

  it('a hundred operations commit together', async () => {
    const id = uniqueId('tx-hundred');
    const ops = Array.from({ length: 100 }, (_, i) => ({ op: 'create', name: `r${i}`, data: i }));
    const res = await txn(id, ops).expect(200);
    expect(res.body.results).toHaveLength(100);
    expect(await resources(id)).toHaveLength(100);
  });

  it('who may: another user learns nothing (404), an agent may not write (403)', async () => {
    const id = await seeded();
    const before = await snapshot(id);
    const res = await txn(id, [{ op: 'update', name: 'a', data: 'stolen' }], stranger.token);
    expect([res.status, res.body.code]).toEqual([404, 'not_found']);
    const missing = await txn(id, [{ op: 'update', name: 'zz', data: 1 }], stranger.token);
    // The same answer whatever the operations name: nothing about the resources leaks.
    expect([missing.status, missing.body.detail]).toEqual([404, res.body.detail]);
    expect(res.body.errors).toBeUndefined();
    const agent = await mintAgentKey(base, owner.token, id);
    const byAgent = await txn(id, [{ op: 'update', name: 'a', data: 'agent' }], agent.token);
    expect([byAgent.status, byAgent.body.code]).toEqual([403, 'forbidden']);
    expect(await snapshot(id)).toEqual(before);
  });

  it('one audit entry per committed transaction, listing op:name@version and never the data', async () => {
    const id = await seeded();
    const secret = `data-${uniqueId('secret')}`;
    const committed = await txn(id, [
      { op: 'update', name: 'a', data: secret, ifMatch: 1 },
      { op: 'create', name: 'n', data: secret },
      { op: 'delete', name: 'c' },
      { op: 'check', name: 'b', ifMatch: 2 },
    ])
      .set('X-Request-Id', `tx-ok-${id}`)
      .expect(200);
    expect(committed.status).toBe(200);
    await txn(id, [
      { op: 'update', name: 'a', data: secret },
      { op: 'check', name: 'zz' },
    ])
      .set('X-Request-Id', `tx-failed-${id}`)
      .expect(404);
    const entries = await auditOf(id);
    const ours = entries.filter((e) => e.event === 'resources.transaction');
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({
      event: 'resources.transaction',
      actor: `user:${owner.subject}`,
      outcome: 'success',
      status: 200,
      requestId: `tx-ok-${id}`,
      action: 'update:a@2 create:n@1 delete:c@1 check:b@2',
    });
    expect(JSON.stringify(entries)).not.toContain(secret);
    expect(entries.some((e) => e.requestId === `tx-failed-${id}`)).toBe(false);
  });
});

describe('through negotiate: data-tool/apply-batch', () => {
  async function writable(): Promise<string> {
    const id = await seeded();
    await as(base, owner.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'upgrade:data-tool:level-2' })
      .expect(200);
    return id;
  }

  function applyBatch(id: string, operations: unknown): supertest.Test {
    return as(base, owner.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'data-tool/apply-batch', args: { operations } });
  }

  it('applies the operations as data-tool and returns their results', async () => {
    const id = await writable();
    const res = await applyBatch(id, [
      { op: 'update', name: 'a', data: 10, ifMatch: 1 },
      { op: 'create', name: 'n', data: 'new' },
      { op: 'delete', name: 'c' },
    ]).expect(200);
    expect(res.body.success).toBe(true);
    expect(res.body.output.results).toEqual([
      expect.objectContaining({ name: 'a', data: 10, version: 2, updatedBy: 'data-tool' }),
      expect.objectContaining({ name: 'n', createdBy: 'data-tool', version: 1 }),
      null,
    ]);
    expect(await snapshot(id)).toEqual({ a: [2, 10], b: [2, 2], n: [1, 'new'] });
  });

  it.each([
    ['create of an existing name', { op: 'create', name: 'a', data: 1 }, 409, 'resource_exists'],
    ['update of a missing name', { op: 'update', name: 'zz', data: 1 }, 404, 'resource_not_found'],
    ['a stale ifMatch', { op: 'check', name: 'b', ifMatch: 1 }, 412, 'precondition_failed'],
    ['oversized data', { op: 'update', name: 'b', data: 'x'.repeat(RESOURCE_MAX_BYTES) }, 413, 'resource_too_large'],
  ])('%s: negotiate code, operations/K in the error, the whole batch rolled back', async (_w, bad, status, code) => {
    const id = await writable();
    const before = await snapshot(id);
    const res = await applyBatch(id, [
      { op: 'update', name: 'a', data: 'changed' },
      { op: 'create', name: 'made', data: 1 },
      bad,
    ]);
    expect([res.status, res.body.success, res.body.code]).toEqual([status, false, code]);
    expect(res.body.error).toMatch(/^operations\/2: /);
    expect(await snapshot(id)).toEqual(before);
  });

  it('malformed operations are invalid_args, refused before anything runs', async () => {
    const id = await writable();
    const res = await applyBatch(id, [{ op: 'create', name: 'n' }]);
    expect([res.status, res.body.code]).toEqual([400, 'invalid_args']);
    const none = await applyBatch(id, []);
    expect([none.status, none.body.code]).toEqual([400, 'invalid_args']);
  });

  it('needs level 2', async () => {
    const id = await seeded();
    const res = await applyBatch(id, [{ op: 'check', name: 'a' }]);
    expect([res.status, res.body.code]).toEqual([403, 'permission_required']);
  });
});

describe('a TOOLS_DIR tool: ctx.sharedContext.transaction in its worker', () => {
  async function writable(): Promise<string> {
    const id = await seeded();
    await request(t.app, TEST_ADMIN_TOKEN).put(`/conversations/${id}/permissions/batch-tool`).send({ level: 2 });
    return id;
  }

  function run(id: string, args: Body): supertest.Test {
    return as(base, owner.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'batch-tool/mark-then-batch', args });
  }

  it('commits the batch with the action’s other writes', async () => {
    const id = await writable();
    const res = await run(id, { marker: 'm', operations: [{ op: 'update', name: 'a', data: 5, ifMatch: 1 }] });
    expect(res.status).toBe(200);
    expect(res.body.output.results[0]).toMatchObject({ name: 'a', version: 2, updatedBy: 'batch-tool' });
    expect(await snapshot(id)).toMatchObject({ a: [2, 5], m: [1, { marked: true }] });
  });

  it('a failing operation rolls back the whole action, the marker too, with its code and index', async () => {
    const id = await writable();
    const before = await snapshot(id);
    const res = await run(id, {
      marker: 'm',
      operations: [
        { op: 'update', name: 'a', data: 5 },
        { op: 'update', name: 'b', data: 5, ifMatch: 1 },
      ],
    });
    expect([res.status, res.body.code]).toEqual([412, 'precondition_failed']);
    expect(res.body.error).toMatch(/^operations\/1: /);
    expect(await snapshot(id)).toEqual(before);
  });

  it('a tool that catches a failure after partial writes still fails: nothing commits', async () => {
    const id = await writable();
    const before = await snapshot(id);
    const res = await run(id, {
      marker: 'm',
      swallow: true,
      operations: [
        { op: 'delete', name: 'c' },
        { op: 'create', name: 'a', data: 1 },
      ],
    });
    expect([res.status, res.body.code]).toEqual([409, 'resource_exists']);
    expect(await snapshot(id)).toEqual(before);
  });

  it('a failure before any write reaches the tool with its index, and the tool may carry on', async () => {
    const id = await writable();
    const res = await run(id, {
      marker: 'm',
      swallow: true,
      operations: [
        { op: 'check', name: 'a' },
        { op: 'check', name: 'zz' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.output.caught).toEqual({
      code: 'resource_not_found',
      index: 1,
      message: 'operations/1: Resource not found: zz',
    });
    expect(await snapshot(id)).toMatchObject({ m: [1, { marked: true }] });
  });
});
