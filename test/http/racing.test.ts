/**
 * Read-modify-write races between two instances of the app on one database
 * (what two processes are to Postgres): transforms that read a resource and
 * write back something computed from it must each see the previous one's
 * result, and actions that deadlock are run again rather than failed.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Express } from 'express';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { serverUrl } from '../support/db-server';
import { type PeerApp, createPeerApp } from '../support/peer-app';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';

/**
 * Locks `first`, waits (bounded) until the other call has locked its own
 * first resource, then locks `second`: two calls in opposite orders deadlock
 * on their first run. Every run is recorded in a file, so the test sees the retry.
 */
const LOCK_PAIR_TOOL = `const fs = require('node:fs');
const path = require('node:path');
module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'lock-pair', version: '1.0.0', description: 'Reads two resources in a given order, appends a mark to both',
  actions: {
    'mark-pair': defineAction({
      description: 'Marks first then second',
      level: 2,
      input: z.object({
        first: z.string(), second: z.string(), me: z.string(), other: z.string(), dir: z.string(),
        swallow: z.boolean().optional(),
      }),
      handler: async ({ first, second, me, other, dir, swallow }, ctx) => {
        fs.appendFileSync(path.join(dir, 'runs-' + me), 'run\\n');
        const a = await ctx.sharedContext.getResource(first);
        fs.writeFileSync(path.join(dir, 'locked-' + me), '');
        const deadline = Date.now() + 10000;
        while (!fs.existsSync(path.join(dir, 'locked-' + other))) {
          if (Date.now() > deadline) throw new Error('the other call never arrived');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        let b;
        try {
          b = await ctx.sharedContext.getResource(second);
        } catch (err) {
          if (!swallow) throw err;
          return { swallowed: String(err) }; // a careless tool: "succeeds" over an aborted transaction
        }
        await ctx.sharedContext.updateResource(first, [...a.data, me]);
        await ctx.sharedContext.updateResource(second, [...b.data, me]);
        return { marked: me };
      },
    }),
  },
});
`;

const onServer = serverUrl() !== undefined;

let one: TestApp;
let two: PeerApp;
let toolsDir: ScratchDir;
let work: ScratchDir;

beforeAll(async () => {
  if (!onServer) return;
  toolsDir = scratchDir('racing-tools', { 'lock-pair.js': LOCK_PAIR_TOOL });
  work = scratchDir('racing-work');
  const env = { TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'false' };
  one = await createTestApp(env);
  two = await createPeerApp(one, env);
});

afterAll(async () => {
  await two?.close();
  await one?.close();
  toolsDir?.remove();
  work?.remove();
});

type Body = Record<string, unknown>;

function neg(app: Express, conversationId: string, body: Body): supertest.Test {
  return request(app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

async function put(conversationId: string, name: string, data: unknown): Promise<void> {
  await request(one.app).put(`/conversations/${conversationId}/resources/${name}`).send({ data }).expect(201);
}

async function get(conversationId: string, name: string): Promise<{ data: unknown; version: number }> {
  return (await request(one.app).get(`/conversations/${conversationId}/resources/${name}`).expect(200)).body;
}

async function allow(conversationId: string, tool: string, level: number): Promise<void> {
  expect((await neg(one.app, conversationId, { action: `upgrade:${tool}:level-${level}` })).status).toBe(200);
}

function transform(app: Express, conversationId: string, args: Body): supertest.Test {
  return neg(app, conversationId, { action: 'transform-tool/transform-resource', args });
}

(onServer ? describe : describe.skip)('read-modify-write across two app instances', () => {
  it('50 racing reverse transforms of one resource: each is computed from the previous one', async () => {
    const c = uniqueId('rmw');
    await allow(c, 'transform-tool', 2);
    await put(c, 'word', 'abc');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        transform(i % 2 ? two.app : one.app, c, { name: 'word', operation: 'reverse' }),
      ),
    );

    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 50 }, () => 200));
    // Version v holds the data reversed v-1 times: "abc" at odd versions, "cba" at even ones.
    // A transform computed from stale data writes the same string as its predecessor.
    const written = results.map((r) => r.body.output.resource as { data: string; version: number });
    const stale = written.filter((w) => w.data !== (w.version % 2 ? 'abc' : 'cba'));
    expect({ stale: stale.length }).toEqual({ stale: 0 });
    expect(written.map((w) => w.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    expect(await get(c, 'word')).toMatchObject({ version: 51, data: 'abc' });
  });

  it('30 rounds of two concurrent field transforms on different fields: both fields are kept', async () => {
    const c = uniqueId('rmw');
    await allow(c, 'transform-tool', 2);
    const lost: number[] = [];
    for (let round = 0; round < 30; round++) {
      const name = `doc-${round}`;
      await put(c, name, { a: 'left', b: 'right', n: round });
      const [left, right] = await Promise.all([
        transform(one.app, c, { name, operation: 'uppercase', field: 'a' }),
        transform(two.app, c, { name, operation: 'uppercase', field: 'b' }),
      ]);
      expect([left.status, right.status]).toEqual([200, 200]);
      const { data, version } = await get(c, name);
      expect(version).toBe(3);
      if ((data as { a: string }).a !== 'LEFT' || (data as { b: string }).b !== 'RIGHT') lost.push(round);
    }
    expect({ roundsThatLostAField: lost.length }).toEqual({ roundsThatLostAField: 0 });
  });

  it('racing creators of one new target: each create either wins or gets resource_exists, nothing lost', async () => {
    const c = uniqueId('rmw');
    await allow(c, 'transform-tool', 2);
    for (let i = 0; i < 10; i++) await put(c, `src-${i}`, `value ${i}`);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        transform(i % 2 ? two.app : one.app, c, { name: `src-${i}`, operation: 'uppercase', target: 'target' }),
      ),
    );
    const statuses = results.map((r) => `${r.status} ${r.body.code ?? 'ok'}`);
    expect(statuses.every((s) => s === '200 ok' || s === '409 resource_exists')).toBe(true);
    const succeeded = results.filter((r) => r.status === 200);
    // Every successful write is one version of the target; the last one is what is stored.
    const final = await get(c, 'target');
    expect(final.version).toBe(succeeded.length);
    const last = succeeded.find((r) => r.body.output.resource.version === final.version)!;
    expect(final.data).toEqual(last.body.output.resource.data);
  });

  it.each([
    ['rethrows', false],
    ['swallows', true],
  ])(
    'two actions locking two resources in opposite orders, a handler that %s the deadlock error: the victim is run again and both succeed',
    async (_label, swallow) => {
      const c = uniqueId('rmw');
      await allow(c, 'lock-pair', 2);
      await put(c, 'left', []);
      await put(c, 'right', []);
      const dir = mkdtempSync(work.file('deadlock-'));
      const [x, y] = await Promise.all([
        neg(one.app, c, {
          action: 'lock-pair/mark-pair',
          args: { first: 'left', second: 'right', me: 'x', other: 'y', dir, swallow },
        }),
        neg(two.app, c, {
          action: 'lock-pair/mark-pair',
          args: { first: 'right', second: 'left', me: 'y', other: 'x', dir, swallow },
        }),
      ]);

      expect([x.status, x.body.code, y.status, y.body.code]).toEqual([200, undefined, 200, undefined]);
      // A swallowed deadlock must not pass for success: its transaction could not commit anything.
      expect([x.body.output, y.body.output]).toEqual([{ marked: 'x' }, { marked: 'y' }]);
      const runs = ['x', 'y'].map((me) => readFileSync(join(dir, `runs-${me}`), 'utf8').split('\n').length - 1);
      expect(runs.sort()).toEqual([1, 2]); // the victim ran twice, the other once
      // The victim's first run was rolled back: each mark is there once, in commit order on both.
      const left = (await get(c, 'left')).data as string[];
      const right = (await get(c, 'right')).data as string[];
      expect([...left].sort()).toEqual(['x', 'y']);
      expect(right).toEqual(left);
    },
  );

  it('a read-level action does not wait for a write action holding the lock', async () => {
    const c = uniqueId('rmw');
    await allow(c, 'lock-pair', 2);
    await put(c, 'left', []);
    await put(c, 'right', []);
    const dir = mkdtempSync(work.file('gate-'));
    // Holds the lock on "left" until the test creates locked-gate (or its 10 s deadline fails it).
    const holder = neg(one.app, c, {
      action: 'lock-pair/mark-pair',
      args: { first: 'left', second: 'right', me: 'x', other: 'gate', dir },
    }).then((r) => r);
    const deadline = Date.now() + 10000;
    while (!existsSync(join(dir, 'locked-x'))) {
      if (Date.now() > deadline) throw new Error('the holder never locked');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const read = await neg(two.app, c, { action: 'data-tool/read-resource', args: { name: 'left' } });
    writeFileSync(join(dir, 'locked-gate'), '');
    // Had the read waited for the lock, the holder would have given up (500) before it answered.
    expect((await holder).status).toBe(200);
    expect(read.status).toBe(200);
    expect(read.body.output).toMatchObject({ data: [], version: 1 });
  });
});
