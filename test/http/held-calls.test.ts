/**
 * Held calls (API.md, "Held calls"), over real HTTP on a real Postgres: a
 * negotiate with `Prefer: wait=N` that needs approval waits for the decision
 * (the test waits until the call is held, then decides): approved once, it
 * runs and the approval is used; for the conversation, it runs at the raised
 * level; rejected, 403 approval_rejected with the reason; undecided at N,
 * the 403 permission_required. A larger N is clamped, a malformed Prefer
 * ignored, a client that leaves frees its waiter, shutdown releases every
 * hold, and beyond the per-principal cap a call answers at once. Over MCP,
 * MCP_APPROVAL_WAIT_SECONDS holds a tools/call (both the 1.x client, served
 * by the SDK, and the 2026-07-28 v2 client, served by the fast path).
 */
import http, { type Server } from 'node:http';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type MintedKey,
  createConversation,
  listen,
  mcpConnect,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
/** Same database, APPROVAL_MAX_WAIT_SECONDS=1 and at most one held call per principal. */
let strict: TestApp;
/** Same database, MCP_APPROVAL_WAIT_SECONDS=30. */
let mcpWaits: TestApp;
const servers: Server[] = [];
let app: string;
let strictApp: string;
let mcpApp: string;
let alice: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  strict = await createTestApp(
    { APPROVAL_MAX_WAIT_SECONDS: '1', APPROVAL_MAX_HELD_PER_PRINCIPAL: '1' },
    { replicaOf: t },
  );
  mcpWaits = await createTestApp({ MCP_APPROVAL_WAIT_SECONDS: '30' }, { replicaOf: t });
  for (const [target, set] of [
    [t, (b: string) => (app = b)],
    [strict, (b: string) => (strictApp = b)],
    [mcpWaits, (b: string) => (mcpApp = b)],
  ] as const) {
    const l = await listen(target.app);
    servers.push(l.server);
    set(l.base);
  }
  alice = await mintKey(app, 'user', uniqueId('alice'));
});

afterAll(async () => {
  for (const s of servers) await stopListening(s);
  await mcpWaits?.close();
  await strict?.close();
  await t?.close();
});

type Body = Record<string, unknown>;

const CREATE = (name: string): Body => ({ action: 'data-tool/create-resource', args: { name, data: { x: 1 } } });

async function setup(): Promise<{ id: string; agent: MintedKey }> {
  const id = uniqueId('held');
  await createConversation(app, alice.token, id);
  return { id, agent: await mintAgentKey(app, alice.token, id) };
}

function negotiate(base: string, token: string, id: string, body: Body, prefer?: string): supertest.Test {
  const req = request(base, token).post(`/conversations/${id}/negotiate`);
  if (prefer !== undefined) req.set('Prefer', prefer);
  return req.send(body);
}

/** Starts the request now (supertest is lazy) and keeps its answer. */
function start(test: supertest.Test): Promise<supertest.Response> {
  return new Promise((resolve, reject) => {
    void test.then(resolve, reject);
  });
}

async function pendingOf(id: string): Promise<{ id: string; status: string }[]> {
  const res = await request(app, alice.token).get(`/conversations/${id}/approvals`).expect(200);
  return res.body.approvals as { id: string; status: string }[];
}

/** Waits until `on` holds `n` calls; returns the one pending approval of the conversation. */
async function heldOn(on: TestApp, id: string, n = 1): Promise<string> {
  await waitFor(`${n} call(s) held`, () => on.services.held.size === n);
  const list = await pendingOf(id);
  expect(list).toHaveLength(1);
  return list[0]!.id;
}

const decide = (id: string, approvalId: string, verb: 'approve' | 'reject', body: Body): supertest.Test =>
  request(app, alice.token).post(`/conversations/${id}/approvals/${approvalId}/${verb}`).send(body);

describe('negotiate with Prefer: wait=N', () => {
  it('approved once while held: the call runs, answers 200 with the result, and the approval is used', async () => {
    const { id, agent } = await setup();
    const answer = start(negotiate(app, agent.token, id, CREATE('once'), 'wait=30'));
    const approvalId = await heldOn(t, id);
    await decide(id, approvalId, 'approve', { scope: 'once' }).expect(200);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.headers['preference-applied']).toBe('wait=30');
    expect(res.body).toEqual(expect.objectContaining({ success: true }));
    const read = await request(app, alice.token).get(`/conversations/${id}/resources/once`).expect(200);
    expect(read.body.data).toEqual({ x: 1 });
    const a = await request(app, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200);
    expect(a.body.status).toBe('used');
    expect(t.services.held.size).toBe(0);
  });

  it('approved for the conversation while held: the call runs at the raised level', async () => {
    const { id, agent } = await setup();
    const answer = start(negotiate(app, agent.token, id, CREATE('conv'), 'wait=30'));
    const approvalId = await heldOn(t, id);
    await decide(id, approvalId, 'approve', { scope: 'conversation' }).expect(200);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    await request(app, alice.token).get(`/conversations/${id}/resources/conv`).expect(200);
    const perms = await request(app, alice.token).get(`/conversations/${id}/permissions`).expect(200);
    const level = (perms.body.tools as { tool: string; level: number }[]).find((r) => r.tool === 'data-tool')!.level;
    expect(level).toBe(2);
  });

  it("an agent's upgrade: held and approved once: the level is set and the answer is 200", async () => {
    const { id, agent } = await setup();
    const answer = start(negotiate(app, agent.token, id, { action: 'upgrade:data-tool:level-2' }, 'wait=30'));
    const approvalId = await heldOn(t, id);
    await decide(id, approvalId, 'approve', { scope: 'once' }).expect(200);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const perms = await request(app, alice.token).get(`/conversations/${id}/permissions`).expect(200);
    const level = (perms.body.tools as { tool: string; level: number }[]).find((r) => r.tool === 'data-tool')!.level;
    expect(level).toBe(2);
  });

  it('rejected while held: 403 approval_rejected with the reason, and nothing ran', async () => {
    const { id, agent } = await setup();
    const answer = start(negotiate(app, agent.token, id, CREATE('nope'), 'wait=30'));
    const approvalId = await heldOn(t, id);
    await decide(id, approvalId, 'reject', { reason: 'not on a Friday' }).expect(200);
    const res = await answer;
    expect(res.status).toBe(403);
    expect(res.headers['preference-applied']).toBe('wait=30');
    expect(res.body.code).toBe('approval_rejected');
    expect(res.body.error).toContain('not on a Friday');
    await request(app, alice.token).get(`/conversations/${id}/resources/nope`).expect(404);
  });

  it('with an Idempotency-Key: the held call outcome is kept for the body the client sent', async () => {
    const { id, agent } = await setup();
    const key = uniqueId('key');
    const answer = start(negotiate(app, agent.token, id, CREATE('kept'), 'wait=30').set('Idempotency-Key', key));
    const approvalId = await heldOn(t, id);
    await decide(id, approvalId, 'approve', { scope: 'once' }).expect(200);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.headers['preference-applied']).toBe('wait=30');
    // The client's repeat (same body, same key) is answered from the kept outcome, running nothing.
    const again = await negotiate(app, agent.token, id, CREATE('kept')).set('Idempotency-Key', key);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(res.body);
  });

  it('undecided when N passes: the usual 403 permission_required with the pending approval', async () => {
    const { id, agent } = await setup();
    const started = Date.now();
    const res = await negotiate(app, agent.token, id, CREATE('late'), 'wait=1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(res.status).toBe(403);
    expect(res.headers['preference-applied']).toBe('wait=1');
    expect(res.body).toEqual(
      expect.objectContaining({
        code: 'permission_required',
        approval: expect.objectContaining({ status: 'pending' }),
      }),
    );
    expect((await pendingOf(id))[0]!.status).toBe('pending');
    expect(t.services.held.size).toBe(0);
  });

  it('clamps N to APPROVAL_MAX_WAIT_SECONDS and says so', async () => {
    const { id, agent } = await setup();
    const res = await negotiate(strictApp, agent.token, id, CREATE('clamped'), 'respond-async, wait=600');
    expect(res.status).toBe(403);
    expect(res.headers['preference-applied']).toBe('wait=1');
  });

  it('ignores a malformed Prefer, and answers a call needing no approval at once', async () => {
    const { id, agent } = await setup();
    for (const prefer of ['wait=soon', 'wait', 'wait=-1', 'wait=0']) {
      const res = await negotiate(app, agent.token, id, CREATE('m'), prefer);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('permission_required');
      expect(res.headers['preference-applied']).toBeUndefined();
    }
    const read = await negotiate(app, agent.token, id, { action: 'data-tool/list-resources' }, 'wait=30');
    expect(read.status).toBe(200);
    expect(read.headers['preference-applied']).toBeUndefined();
  });

  it('a client that leaves while held frees its waiter', async () => {
    const { id, agent } = await setup();
    const body = JSON.stringify(CREATE('gone'));
    const req = http.request(`${app}/conversations/${id}/negotiate`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${agent.token}`,
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        Prefer: 'wait=60',
      },
    });
    req.on('error', () => undefined);
    req.end(body);
    await heldOn(t, id);
    req.destroy();
    await waitFor('the waiter removed', () => t.services.held.size === 0, 5000);
  });

  it('beyond APPROVAL_MAX_HELD_PER_PRINCIPAL a call answers at once, without holding', async () => {
    const { id, agent } = await setup();
    const first = start(negotiate(strictApp, agent.token, id, CREATE('cap1'), 'wait=1'));
    await waitFor('one call held', () => strict.services.held.size === 1);
    const second = await negotiate(strictApp, agent.token, id, CREATE('cap2'), 'wait=1');
    expect(second.status).toBe(403);
    expect(second.headers['preference-applied']).toBeUndefined();
    expect(strict.services.held.size).toBe(1);
    expect((await first).headers['preference-applied']).toBe('wait=1');
  });
});

describe('MCP tools/call with MCP_APPROVAL_WAIT_SECONDS', () => {
  it('a 1.x client (served by the SDK) gets the result once the owner approves', async () => {
    const { id, agent } = await setup();
    const mcp = await mcpConnect(mcpApp, id, agent.token);
    try {
      const args = { name: 'via-mcp', data: { y: 2 } };
      const call = mcp.client.callTool({ name: 'data-tool_create-resource', arguments: args });
      const approvalId = await heldOn(mcpWaits, id);
      await decide(id, approvalId, 'approve', { scope: 'once' }).expect(200);
      const ran = await call;
      expect(ran.isError).toBeFalsy();
      await request(app, alice.token).get(`/conversations/${id}/resources/via-mcp`).expect(200);
      const a = await request(app, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200);
      expect(a.body.status).toBe('used');
    } finally {
      await mcp.close();
    }
  });

  it('a 2026-07-28 client (the fast path) gets approval_rejected with the reason', async () => {
    const { id, agent } = await setup();
    const client = new ClientV2(
      { name: 'host-v2', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new TransportV2(new URL(`${mcpApp}/conversations/${id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${agent.token}` } },
      }),
    );
    try {
      await client.listTools();
      const call = client.callTool({ name: 'data-tool_create-resource', arguments: { name: 'v2', data: 1 } });
      const approvalId = await heldOn(mcpWaits, id);
      await decide(id, approvalId, 'reject', { reason: 'use the other one' }).expect(200);
      const res = await call;
      expect(res.isError).toBe(true);
      expect((res._meta as { code: string }).code).toBe('approval_rejected');
      expect(JSON.stringify(res.content)).toContain('use the other one');
    } finally {
      await client.close();
    }
  });

  it("the host's own Prefer: wait=N holds a tools/call where MCP_APPROVAL_WAIT_SECONDS is 0", async () => {
    const { id, agent } = await setup();
    const client = new ClientV2(
      { name: 'host-v2', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new TransportV2(new URL(`${app}/conversations/${id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${agent.token}`, Prefer: 'wait=30' } },
      }),
    );
    try {
      await client.listTools();
      const call = client.callTool({ name: 'data-tool_create-resource', arguments: { name: 'pref', data: 1 } });
      const approvalId = await heldOn(t, id);
      await decide(id, approvalId, 'approve', { scope: 'once' }).expect(200);
      expect((await call).isError).toBeFalsy();
      await request(app, alice.token).get(`/conversations/${id}/resources/pref`).expect(200);
    } finally {
      await client.close();
    }
  });

  it('without MCP_APPROVAL_WAIT_SECONDS a tools/call answers at once, as before', async () => {
    const { id, agent } = await setup();
    const mcp = await mcpConnect(app, id, agent.token);
    try {
      const refused = await mcp.client.callTool({
        name: 'data-tool_create-resource',
        arguments: { name: 'x', data: 1 },
      });
      expect((refused._meta as { code: string }).code).toBe('permission_required');
      expect(t.services.held.size).toBe(0);
    } finally {
      await mcp.close();
    }
  });
});

describe('shutdown', () => {
  it('releases held calls at once with their current state, and holds none after', async () => {
    const { id, agent } = await setup();
    const own = await createTestApp({}, { replicaOf: t });
    const l = await listen(own.app);
    try {
      const answer = start(negotiate(l.base, agent.token, id, CREATE('stop'), 'wait=60'));
      await waitFor('one call held', () => own.services.held.size === 1);
      own.services.held.releaseAll();
      const res = await answer;
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('permission_required');
      expect(own.services.held.size).toBe(0);
      const after = await negotiate(l.base, agent.token, id, CREATE('stop'), 'wait=60');
      expect(after.status).toBe(403);
      expect(after.headers['preference-applied']).toBeUndefined();
    } finally {
      await stopListening(l.server);
      await own.close();
    }
  });
});
