/**
 * TOOLS_DIR tools run in worker threads (API.md "Running"): a handler that
 * spins is stopped at TOOL_TIMEOUT_MS with its writes rolled back while the
 * service keeps answering; modules that spin or throw at load are skipped;
 * the shared context, its transaction and its level check, the logger,
 * exportDir and ToolError codes all work across the boundary.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { ConversationSharedContext } from '../../src/core/shared-context';
import type { ToolLogger } from '../../src/core/tool-interface';
import { ToolRegistry } from '../../src/core/tool-registry';
import { uniqueId } from '../support/ids';
import { type TestApp, createTestApp } from '../support/test-app';
import {
  SANDBOXED_TOOL,
  SPIN_AT_LOAD,
  THROW_AT_LOAD,
  TS_TOOL,
  spinToolModule,
  toolsDirWith,
  waitForFile,
} from '../support/isolation-tools';

const TIMEOUT_MS = 1000;
// Long enough for a worker to load a module under tsx on a busy machine, short enough to wait out.
const LOAD_TIMEOUT_MS = 5000;

/** Set in the service's (this test process's) environment, as DATABASE_URL would be: no worker may read it. */
const PROBED_VARIABLE = 'TOOL_ISOLATION_TEST_SECRET';
process.env[PROBED_VARIABLE] = 'visible to the service only';

let t: TestApp;
let toolsDir: string;
let markerDir: string;

beforeAll(async () => {
  markerDir = mkdtempSync(join(tmpdir(), 'spin-markers-'));
  toolsDir = toolsDirWith({
    'sandboxed-tool.js': SANDBOXED_TOOL,
    'spin-tool.js': spinToolModule(markerDir),
    'typed-tool.ts': TS_TOOL,
    'spins-at-load.js': SPIN_AT_LOAD,
    'throws-at-load.js': THROW_AT_LOAD,
  });
  t = await createTestApp(
    { TOOLS_DIR: toolsDir, TOOL_TIMEOUT_MS: String(TIMEOUT_MS) },
    { registry: { loadTimeoutMs: LOAD_TIMEOUT_MS } },
  );
});

afterAll(async () => {
  await t?.close();
  for (const dir of [toolsDir, markerDir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

function neg(conversationId: string, action: string, args: Record<string, unknown> = {}): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send({ action, args });
}

async function grant(conversationId: string, tool: string, level: number): Promise<void> {
  await request(t.app).put(`/conversations/${conversationId}/permissions/${tool}`).send({ level }).expect(200);
}

describe('a handler that spins', () => {
  it('is stopped at TOOL_TIMEOUT_MS, its write rolled back, while /healthz keeps answering', async () => {
    const c = uniqueId('spin');
    await grant(c, 'spin-tool', 2);
    let negotiateDone = false;
    const spinning = neg(c, 'spin-tool/write-then-spin', { name: 'half' }).then((res) => {
      negotiateDone = true;
      return res;
    });

    // The worker has written and begun to spin: the service must still answer.
    await waitForFile(join(markerDir, 'half'));
    await request(t.app).get('/healthz').expect(200);
    // The embedded database is one session, held by the spinning action's open
    // transaction until the timeout: there, requests that need it wait (docs/OPERATIONS.md).
    if (!t.database.embedded) {
      await request(t.app).get(`/conversations/${c}/resources`).expect(200);
      await neg(c, 'sandboxed-tool/context-info').expect(200); // another tool, in its own worker
    }
    expect(negotiateDone).toBe(false);

    const res = await spinning;
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    expect(res.body.error).toContain(`within ${TIMEOUT_MS} ms`);
    await request(t.app).get(`/conversations/${c}/resources/half`).expect(404);

    // The worker was replaced: the same tool answers the next call.
    const again = await neg(c, 'spin-tool/ping').expect(200);
    expect(again.body.output).toEqual({ pong: true });
  });

  it('fails the call of a handler that ends its worker, and serves the next call', async () => {
    const c = uniqueId('crash');
    const res = await neg(c, 'spin-tool/crash').expect(500);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    expect(res.body.error).not.toContain('within'); // answered when the worker ended, not at the timeout
    await neg(c, 'spin-tool/ping').expect(200);
  });
});

describe('loading', () => {
  it('skips modules that spin or throw at load and serves the others', async () => {
    const res = await request(t.app).get('/tools').expect(200);
    const names = (res.body.tools as { name: string }[]).map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['sandboxed-tool', 'spin-tool', 'typed-tool', 'data-tool']));
    expect(names).toHaveLength(7 + 3);
  });

  it('logs why each was skipped', async () => {
    const warnings: string[] = [];
    const note = (obj: object | string, msg?: string): void => void warnings.push(`${JSON.stringify(obj)} ${msg}`);
    const logger: ToolLogger = { debug: () => undefined, info: () => undefined, warn: note, error: note };
    const registry = new ToolRegistry({ extraDir: toolsDir, hotReload: false, logger, loadTimeoutMs: LOAD_TIMEOUT_MS });
    try {
      const set = await registry.load();
      expect(set.byName.has('sandboxed-tool')).toBe(true);
      const text = warnings.join('\n');
      expect(text).toMatch(new RegExp(`spins-at-load\\.js: did not finish loading within ${LOAD_TIMEOUT_MS} ms`));
      expect(text).toMatch(/throws-at-load\.js: failed to load: Error: boom while loading/);
    } finally {
      await registry.close();
    }
  });

  it('loads a .ts module in its worker', async () => {
    const res = await neg(uniqueId('ts'), 'typed-tool/double-it', { n: 21 }).expect(200);
    expect(res.body.output).toEqual({ doubled: 42 });
  });
});

describe('the shared context across the boundary', () => {
  it("commits a write action's writes together", async () => {
    const c = uniqueId('commit');
    await grant(c, 'sandboxed-tool', 2);
    const res = await neg(c, 'sandboxed-tool/write-two', { first: 'a', second: 'b' }).expect(200);
    expect(res.body.output).toEqual({ written: ['a', 'b'] });
    const list = await request(t.app).get(`/conversations/${c}/resources`).expect(200);
    expect(JSON.stringify(list.body)).toMatch(/"a".*"b"/s);
    const b = await request(t.app).get(`/conversations/${c}/resources/b`).expect(200);
    expect(b.body).toMatchObject({ data: { n: 2 }, createdBy: 'sandboxed-tool' });
  });

  it('rolls both writes back when the handler throws after them', async () => {
    const c = uniqueId('rollback');
    await grant(c, 'sandboxed-tool', 2);
    const res = await neg(c, 'sandboxed-tool/write-two', { first: 'a', second: 'b', fail: true }).expect(500);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    expect(JSON.stringify(res.body)).not.toMatch(/failed after two writes|\.js|at /);
    await request(t.app).get(`/conversations/${c}/resources/a`).expect(404);
    await request(t.app).get(`/conversations/${c}/resources/b`).expect(404);
  });

  it("refuses a level-1 action's write: tool_error, nothing written", async () => {
    const c = uniqueId('sneaky');
    const res = await neg(c, 'sandboxed-tool/sneaky-write', { name: 'x' }).expect(500);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    await request(t.app).get(`/conversations/${c}/resources/x`).expect(404);
  });

  it('a level-1 action cannot write through the shared context', async () => {
    // list-resources is level 1; the data-tool's own actions never write from it,
    // so this checks the context itself: a read-only context refuses writes.
    const ctx = new ConversationSharedContext({
      conversationId: uniqueId('edge'),
      toolName: 'data-tool',
      resources: t.services.resources,
    });
    await expect(ctx.createResource('x', 1)).rejects.toThrow(/Read-level action/);
  });

  it('carries ToolError codes both ways', async () => {
    const c = uniqueId('codes');
    const missing = await neg(c, 'sandboxed-tool/read-doc', { name: 'nope' }).expect(404);
    expect(missing.body).toMatchObject({ code: 'resource_not_found', error: 'No such doc: nope' });

    // Thrown by the service's context, through the tool, back to the caller.
    await grant(c, 'sandboxed-tool', 2);
    await neg(c, 'sandboxed-tool/write-two', { first: 'dup', second: 'other' }).expect(200);
    const exists = await neg(c, 'sandboxed-tool/write-two', { first: 'dup', second: 'third' }).expect(409);
    expect(exists.body.code).toBe('resource_exists');

    const bad = await neg(c, 'sandboxed-tool/read-doc', { name: 42 }).expect(400);
    expect(bad.body).toMatchObject({ code: 'invalid_args', routing: { tool: 'sandboxed-tool', action: 'read-doc' } });
    expect(bad.body.error).toMatch(/^Invalid args for sandboxed-tool\/read-doc: name: /);
  });

  it('passes ttlSeconds through to the shared context, which checks it (API.md TTL)', async () => {
    const c = uniqueId('ttl');
    await grant(c, 'sandboxed-tool', 2);
    const res = await neg(c, 'sandboxed-tool/write-expiring', { name: 'e', ttl: 60, updateTtl: 120 }).expect(200);
    const { created, updated } = res.body.output;
    expect(created).toMatchObject({ version: 1, createdBy: 'sandboxed-tool', expiresAt: created.updatedAt + 60_000 });
    expect(updated).toMatchObject({ version: 2, expiresAt: updated.updatedAt + 120_000 });

    // A bad one is the tool's invalid_args, and the action's writes roll back.
    const bad = await neg(c, 'sandboxed-tool/write-expiring', { name: 'f', ttl: 60, updateTtl: 0 }).expect(400);
    expect(bad.body).toMatchObject({ code: 'invalid_args' });
    expect(bad.body.error).toContain('ttlSeconds');
    await request(t.app).get(`/conversations/${c}/resources/f`).expect(404);
  });

  it("checks a dry run's args with the tool's own schema, in its worker, running nothing", async () => {
    const c = uniqueId('dry');
    await grant(c, 'sandboxed-tool', 2);
    const dry = (args: Record<string, unknown>): supertest.Test =>
      request(t.app)
        .post(`/conversations/${c}/negotiate`)
        .send({ action: 'sandboxed-tool/write-two', args, dryRun: true });
    const bad = await dry({ first: 'a', second: 7 }).expect(400);
    const real = await neg(c, 'sandboxed-tool/write-two', { first: 'a', second: 7 }).expect(400);
    expect(bad.body).toEqual(real.body);
    expect(bad.body.error).toMatch(/^Invalid args for sandboxed-tool\/write-two: second: /);
    const good = await dry({ first: 'a', second: 'b' }).expect(200);
    expect(good.body).toMatchObject({ success: true, routing: { tool: 'sandboxed-tool' } });
    expect(good.body).not.toHaveProperty('output');
    await request(t.app).get(`/conversations/${c}/resources/a`).expect(404);
  });

  it('answers a ToolError with a code ToolError has not as tool_error, not a 200 with success:false', async () => {
    const res = await neg(uniqueId('odd'), 'sandboxed-tool/odd-code').expect(500);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    expect(JSON.stringify(res.body)).not.toMatch(/teapot/);
  });

  it("does not give the tool the service's environment", async () => {
    expect(process.env[PROBED_VARIABLE]).toBe('visible to the service only');
    const res = await neg(uniqueId('env'), 'sandboxed-tool/env-probe', { name: PROBED_VARIABLE }).expect(200);
    expect(res.body.output).toEqual({ value: null, names: [] });
  });

  it('gives the handler its parsed args, conversation, logger and exportDir', async () => {
    const c = uniqueId('info');
    const res = await neg(c, 'sandboxed-tool/context-info').expect(200);
    expect(res.body.output).toEqual({
      args: { text: 'none' },
      ctxArgs: { text: 'none' },
      conversationId: c,
      toolName: 'sandboxed-tool',
      action: 'context-info',
      exportDir: t.services.config.exportDir,
      listed: 0,
    });
  });

  it("forwards the handler's ctx.logger calls to the logger of its call", async () => {
    const action = t.registry.current().actions.find((a) => a.qualifiedName === 'sandboxed-tool/context-info')!;
    const lines: unknown[][] = [];
    const capture = (obj: object | string, msg?: string): void => void lines.push([obj, msg]);
    const logger: ToolLogger = { debug: capture, info: capture, warn: capture, error: capture };
    const c = uniqueId('logger');
    const sharedContext = new ConversationSharedContext({
      conversationId: c,
      toolName: action.tool,
      resources: t.services.resources,
    });
    const args = { text: 'logged' };
    const ctx = {
      conversationId: c,
      toolName: action.tool,
      action: action.name,
      args,
      sharedContext,
      logger,
      exportDir: '/x',
    };
    await expect(action.run(args, ctx)).resolves.toMatchObject({ args, exportDir: '/x' });
    expect(lines).toEqual([[{ text: 'logged' }, 'context-info ran']]);
  });
});
