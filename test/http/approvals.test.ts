/**
 * Approvals (API.md, Approvals), over real HTTP on a real Postgres: a
 * refusal records a request for exactly that call (reused when identical,
 * also under a race); the owner lists, reads, approves (`once`,
 * `conversation` with an expiry) and rejects; every code of a retry; racing
 * `once` retries run once; pending requests lapse; agents never approve;
 * another owner sees nothing; a call above maxLevel creates nothing; MCP
 * names the approval id and accepts it back.
 */
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type MintedKey,
  createConversation,
  expectProblem,
  listen,
  mcpConnect,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

let t: TestApp;
let replica: TestApp;
let shortTtl: TestApp;
let server: Server | undefined;
let app: string;
let alice: MintedKey;
let bob: MintedKey;

beforeAll(async () => {
  // Two replicas sweep the same database, as two processes would.
  t = await createTestApp({}, { sweepApprovals: true });
  replica = await createTestApp({}, { replicaOf: t, sweepApprovals: true });
  shortTtl = await createTestApp({ APPROVAL_TTL_SECONDS: '1' }, { replicaOf: t });
  ({ server, base: app } = await listen(t.app));
  alice = await mintKey(app, 'user', uniqueId('alice'));
  bob = await mintKey(app, 'user', uniqueId('bob'));
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await shortTtl?.close();
  await replica?.close();
  await t?.close();
});

type Body = Record<string, unknown>;

function negotiate(token: string, conversationId: string, body: Body, target: unknown = app): supertest.Test {
  return request(target as string, token)
    .post(`/conversations/${conversationId}/negotiate`)
    .send(body);
}

const approvalsOf = (id: string): string => `/conversations/${id}/approvals`;

async function setup(extra: Record<string, unknown> = {}): Promise<{ id: string; agent: MintedKey }> {
  const id = uniqueId('appr');
  await createConversation(app, alice.token, id);
  return { id, agent: await mintAgentKey(app, alice.token, id, extra) };
}

async function refuse(token: string, id: string, body: Body): Promise<{ id: string; expiresAt: number }> {
  const res = await negotiate(token, id, body);
  expect(res.status).toBe(403);
  expect(res.body).toEqual(
    expect.objectContaining({
      success: false,
      code: 'permission_required',
      requiresApproval: true,
      approval: { id: expect.any(String), status: 'pending', expiresAt: expect.any(Number) },
    }),
  );
  expect(res.body.approvalReason).toMatch(/^Permission upgrade required/);
  return res.body.approval;
}

async function levelOf(id: string, tool: string): Promise<number> {
  const res = await request(app, alice.token).get(`/conversations/${id}/permissions`).expect(200);
  return (res.body.tools as { tool: string; level: number }[]).find((r) => r.tool === tool)!.level;
}

async function historyOf(id: string): Promise<{ fromLevel: number; toLevel: number; actor: string }[]> {
  const res = await request(app, alice.token).get(`/conversations/${id}/permissions/history`).expect(200);
  return (res.body.events as { fromLevel: number; toLevel: number; actor: string }[]).map(
    ({ fromLevel, toLevel, actor }) => ({ fromLevel, toLevel, actor }),
  );
}

const CREATE = (name: string): Body => ({
  action: 'data-tool/create-resource',
  args: { name, data: { b: 1, a: { d: 2, c: [1, { f: 1, e: 2 }] } } },
});

describe('a permission_required refusal', () => {
  it('records a request for exactly that call, readable by the owner and by the agent that asked', async () => {
    const { id, agent } = await setup();
    const before = Date.now();
    const ref = await refuse(agent.token, id, CREATE('n1'));
    expect(ref.expiresAt).toBeGreaterThanOrEqual(before + 3_599_000);

    const list = await request(app, alice.token).get(approvalsOf(id)).expect(200);
    expect(list.body.approvals).toHaveLength(1);
    const canonical = '{"data":{"a":{"c":[1,{"e":2,"f":1}],"d":2},"b":1},"name":"n1"}';
    expect(list.body.approvals[0]).toEqual({
      id: ref.id,
      conversationId: id,
      kind: 'call',
      tool: 'data-tool',
      action: 'create-resource',
      args: CREATE('n1').args,
      argsDigest: createHash('sha256').update(canonical).digest('hex'),
      requiredLevel: 2,
      currentLevel: 1,
      requestedBy: `agent:${agent.id}`,
      status: 'pending',
      createdAt: expect.any(Number),
      expiresAt: ref.expiresAt,
      decidedBy: null,
      decidedAt: null,
      scope: null,
      reason: null,
    });
    const own = await request(app, agent.token)
      .get(`${approvalsOf(id)}/${ref.id}`)
      .expect(200);
    expect(own.body.id).toBe(ref.id);
  });

  it('reuses the identical pending request (same args in another key order, and ten at once)', async () => {
    const { id, agent } = await setup();
    const first = await refuse(agent.token, id, CREATE('n2'));
    const reordered = {
      args: { data: { a: { c: [1, { e: 2, f: 1 }], d: 2 }, b: 1 }, name: 'n2' },
      action: 'data-tool_create-resource',
    };
    expect((await refuse(agent.token, id, reordered)).id).toBe(first.id);
    const racing = await Promise.all(Array.from({ length: 10 }, () => refuse(agent.token, id, CREATE('n3'))));
    expect(new Set(racing.map((r) => r.id)).size).toBe(1);
    const list = await request(app, alice.token).get(approvalsOf(id)).expect(200);
    expect(list.body.approvals).toHaveLength(2);
    // Newest first.
    expect(list.body.approvals.map((a: { id: string }) => a.id)).toEqual([racing[0]!.id, first.id]);
  });

  it('is not recorded for a dry run, nor for a call above the key maxLevel (level_ceiling)', async () => {
    const { id, agent } = await setup({ maxLevel: 1 });
    const dry = await negotiate(alice.token, id, { ...CREATE('d1'), dryRun: true });
    expect(dry.status).toBe(403);
    expect(dry.body.code).toBe('permission_required');
    expect(dry.body.approval).toBeUndefined();
    const ceiling = await negotiate(agent.token, id, CREATE('d2'));
    expect(ceiling.status).toBe(403);
    expect(ceiling.body.code).toBe('level_ceiling');
    expect(ceiling.body.approval).toBeUndefined();
    const up = await negotiate(agent.token, id, { action: 'upgrade:data-tool:level-2' });
    expect(up.body.code).toBe('level_ceiling');
    const list = await request(app, alice.token).get(approvalsOf(id)).expect(200);
    expect(list.body.approvals).toEqual([]);
  });
});

describe('approve once', () => {
  it('lets exactly that call run once; a second retry is approval_used', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('once'));
    const approved = await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    expect(approved.body).toEqual(
      expect.objectContaining({ status: 'approved', scope: 'once', decidedBy: `user:${alice.subject}` }),
    );
    const run = await negotiate(agent.token, id, { ...CREATE('once'), approvalId: ref.id });
    expect(run.status).toBe(200);
    expect(run.body.output.resource.name).toBe('once');
    expect((await request(app, alice.token).get(`${approvalsOf(id)}/${ref.id}`)).body.status).toBe('used');

    const again = await negotiate(agent.token, id, { ...CREATE('once'), approvalId: ref.id });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('approval_used');
    // The level itself never moved.
    expect(await levelOf(id, 'data-tool')).toBe(1);
  });

  it('runs once when ten retries race: one 200, the version grows by one', async () => {
    const { id, agent } = await setup();
    await request(app, alice.token)
      .put(`/conversations/${id}/resources/doc`)
      .send({ data: { v: 0 } })
      .expect(201);
    const update = { action: 'update-resource', args: { name: 'doc', data: { v: 1 } } };
    const ref = await refuse(agent.token, id, update);
    await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'once' })
      .expect(200);

    const results = await Promise.all(
      Array.from({ length: 10 }, () => negotiate(agent.token, id, { ...update, approvalId: ref.id })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array<number>(9).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.code).toBe('approval_used');
    const doc = await request(app, alice.token).get(`/conversations/${id}/resources/doc`).expect(200);
    expect(doc.body.version).toBe(2);
  });

  it('is given back when the action fails (the consumption rolls back with it)', async () => {
    const { id, agent } = await setup();
    const call = { action: 'update-resource', args: { name: 'missing', data: 1 } };
    const ref = await refuse(agent.token, id, call);
    await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    const failed = await negotiate(agent.token, id, { ...call, approvalId: ref.id });
    expect(failed.body.code).toBe('resource_not_found');
    expect((await request(app, alice.token).get(`${approvalsOf(id)}/${ref.id}`)).body.status).toBe('approved');
  });
});

describe('a retry with an approvalId', () => {
  it('answers approval_mismatch, approval_not_found and (while pending) permission_required with the same approval', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('m1'));
    const pending = await negotiate(agent.token, id, { ...CREATE('m1'), approvalId: ref.id });
    expect(pending.status).toBe(403);
    expect(pending.body).toEqual(
      expect.objectContaining({
        code: 'permission_required',
        approval: { id: ref.id, status: 'pending', expiresAt: ref.expiresAt },
      }),
    );
    await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'once' })
      .expect(200);

    const otherArgs = await negotiate(agent.token, id, { ...CREATE('m2'), approvalId: ref.id });
    expect([otherArgs.status, otherArgs.body.code]).toEqual([409, 'approval_mismatch']);
    const otherAction = await negotiate(agent.token, id, {
      action: 'data-tool/update-resource',
      args: CREATE('m1').args,
      approvalId: ref.id,
    });
    expect([otherAction.status, otherAction.body.code]).toEqual([409, 'approval_mismatch']);
    const unknown = await negotiate(agent.token, id, { ...CREATE('m1'), approvalId: 'apr_nope' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'approval_not_found']);
    const bad = await negotiate(agent.token, id, { ...CREATE('m1'), approvalId: 'not an id' });
    expectProblem(bad, 400, 'validation_failed');
    // None of those used it.
    const run = await negotiate(agent.token, id, { ...CREATE('m1'), approvalId: ref.id });
    expect(run.status).toBe(200);
  });

  it('after a rejection answers approval_rejected with the reason; deciding again is a conflict', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('r1'));
    const rejected = await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/reject`)
      .send({ reason: 'not on a Friday' })
      .expect(200);
    expect(rejected.body).toEqual(expect.objectContaining({ status: 'rejected', reason: 'not on a Friday' }));
    const retry = await negotiate(agent.token, id, { ...CREATE('r1'), approvalId: ref.id });
    expect([retry.status, retry.body.code]).toEqual([403, 'approval_rejected']);
    expect(retry.body.error).toContain('not on a Friday');
    expectProblem(
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'once' }),
      409,
      'conflict',
    );
    expectProblem(
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/reject`)
        .send({}),
      409,
      'conflict',
    );
    const filtered = await request(app, alice.token)
      .get(`${approvalsOf(id)}?status=rejected`)
      .expect(200);
    expect(filtered.body.approvals.map((a: { id: string }) => a.id)).toEqual([ref.id]);
    expect((await request(app, alice.token).get(`${approvalsOf(id)}?status=pending`)).body.approvals).toEqual([]);
    expectProblem(await request(app, alice.token).get(`${approvalsOf(id)}?status=maybe`), 400, 'validation_failed');
  });

  it('rejects without a body ({ reason? }): no reason, and a retry is approval_rejected', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('r-nobody'));
    const rejected = await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/reject`)
      .expect(200);
    expect(rejected.body).toEqual(expect.objectContaining({ status: 'rejected', decidedBy: expect.any(String) }));
    expect(rejected.body.reason ?? null).toBeNull();
    const retry = await negotiate(agent.token, id, { ...CREATE('r-nobody'), approvalId: ref.id });
    expect([retry.status, retry.body.code]).toEqual([403, 'approval_rejected']);
  });

  it('answers approval_expired once the pending request lapses (APPROVAL_TTL_SECONDS); a new refusal records a new one', async () => {
    const { id, agent } = await setup();
    const res = await negotiate(agent.token, id, CREATE('e1'), shortTtl.app);
    const ref = res.body.approval as { id: string; expiresAt: number };
    expect(ref.expiresAt - Date.now()).toBeLessThanOrEqual(1000);
    await waitFor(
      'the request to lapse',
      async () => (await request(app, alice.token).get(`${approvalsOf(id)}/${ref.id}`)).body.status === 'expired',
    );
    const retry = await negotiate(agent.token, id, { ...CREATE('e1'), approvalId: ref.id });
    expect([retry.status, retry.body.code]).toEqual([403, 'approval_expired']);
    expectProblem(
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'once' }),
      409,
      'conflict',
    );
    const fresh = await refuse(agent.token, id, CREATE('e1'));
    expect(fresh.id).not.toBe(ref.id);
  });
});

describe('who may decide', () => {
  it('never an agent (403), and another owner sees nothing (404)', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('w1'));
    expectProblem(
      await request(app, agent.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'once' }),
      403,
      'forbidden',
    );
    expectProblem(
      await request(app, agent.token)
        .post(`${approvalsOf(id)}/${ref.id}/reject`)
        .send({}),
      403,
      'forbidden',
    );
    expectProblem(await request(app, agent.token).get(approvalsOf(id)), 403, 'forbidden');
    for (const res of [
      await request(app, bob.token).get(approvalsOf(id)),
      await request(app, bob.token).get(`${approvalsOf(id)}/${ref.id}`),
      await request(app, bob.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'once' }),
      await request(app, bob.token)
        .post(`${approvalsOf(id)}/${ref.id}/reject`)
        .send({}),
    ]) {
      expectProblem(res, 404, 'not_found');
    }
    expectProblem(await request(app, alice.token).get(`${approvalsOf(id)}/apr_unknown`), 404, 'not_found');
    expectProblem(
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'forever' }),
      400,
      'validation_failed',
    );
    expectProblem(
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'conversation', expiresInSeconds: 0 }),
      400,
      'validation_failed',
    );
    // Still pending after all of that.
    expect((await request(app, alice.token).get(`${approvalsOf(id)}/${ref.id}`)).body.status).toBe('pending');
  });
});

describe('approve for the conversation', () => {
  it('raises the level (history by the approver) and, with an expiry, lowers it back (history by expiry)', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, CREATE('c1'));
    const approved = await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'conversation', expiresInSeconds: 2 })
      .expect(200);
    expect(approved.body).toEqual(expect.objectContaining({ status: 'approved', scope: 'conversation' }));
    expect(await levelOf(id, 'data-tool')).toBe(2);
    expect(await historyOf(id)).toEqual([{ fromLevel: 1, toLevel: 2, actor: `user:${alice.subject}` }]);
    // Any write of the tool runs now, without an approvalId.
    expect((await negotiate(agent.token, id, CREATE('c2'))).status).toBe(200);

    await waitFor('the grant to end', async () => (await historyOf(id)).length === 2);
    expect(await historyOf(id)).toEqual([
      { fromLevel: 1, toLevel: 2, actor: `user:${alice.subject}` },
      { fromLevel: 2, toLevel: 1, actor: 'expiry' },
    ]);
    expect(await levelOf(id, 'data-tool')).toBe(1);
    await refuse(agent.token, id, CREATE('c3'));
  });

  it('is not honoured past its end even before any sweep has run', async () => {
    t.services.approvals.stopSweeper();
    replica.services.approvals.stopSweeper();
    try {
      const { id, agent } = await setup();
      const ref = await refuse(agent.token, id, CREATE('s1'));
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${ref.id}/approve`)
        .send({ scope: 'conversation', expiresInSeconds: 60 })
        .expect(200);
      expect((await negotiate(agent.token, id, CREATE('s2'))).status).toBe(200);
      await t.db.pool.query(
        "UPDATE tool_permissions SET expires_at = now() - interval '1 second' WHERE conversation_id = $1",
        [id],
      );
      await refuse(agent.token, id, CREATE('s3'));
      expect(await levelOf(id, 'data-tool')).toBe(1);
      expect(await historyOf(id)).toHaveLength(1);
    } finally {
      t.services.approvals.startSweeper();
      replica.services.approvals.startSweeper();
    }
  });
});

describe('a lapsed pending request no sweep has marked yet', () => {
  it('reads as expired, answers approval_expired, and a new refusal records a new request', async () => {
    t.services.approvals.stopSweeper();
    replica.services.approvals.stopSweeper();
    try {
      const { id, agent } = await setup();
      const ref = await refuse(agent.token, id, CREATE('l1'));
      await t.db.pool.query("UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1", [ref.id]);
      const [{ status }] = (await t.db.pool.query('SELECT status FROM approvals WHERE id = $1', [ref.id])).rows;
      expect(status).toBe('pending');
      expect((await request(app, alice.token).get(`${approvalsOf(id)}/${ref.id}`)).body.status).toBe('expired');
      const retry = await negotiate(agent.token, id, { ...CREATE('l1'), approvalId: ref.id });
      expect([retry.status, retry.body.code]).toEqual([403, 'approval_expired']);
      const fresh = await refuse(agent.token, id, CREATE('l1'));
      expect(fresh.id).not.toBe(ref.id);
      const statuses = (await request(app, alice.token).get(approvalsOf(id))).body.approvals.map(
        (a: { status: string }) => a.status,
      );
      expect(statuses).toEqual(['pending', 'expired']);
    } finally {
      t.services.approvals.startSweeper();
      replica.services.approvals.startSweeper();
    }
  });
});

describe("an agent's upgrade:", () => {
  it('records a request of kind upgrade; approved once, the retry applies it once', async () => {
    const { id, agent } = await setup();
    const ref = await refuse(agent.token, id, { action: 'upgrade:data-tool:level-2' });
    const got = await request(app, alice.token)
      .get(`${approvalsOf(id)}/${ref.id}`)
      .expect(200);
    expect(got.body).toEqual(
      expect.objectContaining({ kind: 'upgrade', tool: 'data-tool', requiredLevel: 2, currentLevel: 1 }),
    );
    await request(app, alice.token)
      .post(`${approvalsOf(id)}/${ref.id}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    const applied = await negotiate(agent.token, id, { action: 'upgrade:data-tool:level-2', approvalId: ref.id });
    expect(applied.status).toBe(200);
    expect(applied.body.output).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });
    expect(await historyOf(id)).toEqual([{ fromLevel: 1, toLevel: 2, actor: `user:${alice.subject}` }]);
    const again = await negotiate(agent.token, id, { action: 'upgrade:data-tool:level-2', approvalId: ref.id });
    expect([again.status, again.body.code]).toEqual([409, 'approval_used']);
  });
});

describe('over MCP', () => {
  it('a call needing approval names the approval id; approved once, the call with _meta.approvalId runs', async () => {
    const { id, agent } = await setup();
    const mcp = await mcpConnect(app, id, agent.token);
    try {
      const args = { name: 'via-mcp', data: { x: 1 } };
      const refused = await mcp.client.callTool({ name: 'data-tool_create-resource', arguments: args });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toBeUndefined();
      const approval = (refused._meta as { approval: { id: string } }).approval;
      const text = (refused.content as { type: string; text: string }[])[0]!.text;
      expect(text).toContain(approval.id);
      expect(text).toMatch(/^Permission upgrade required/);
      await request(app, alice.token)
        .post(`${approvalsOf(id)}/${approval.id}/approve`)
        .send({ scope: 'once' })
        .expect(200);
      const ran = await mcp.client.callTool({
        name: 'data-tool_create-resource',
        arguments: args,
        _meta: { approvalId: approval.id },
      });
      expect(ran.isError).toBeFalsy();
      const again = await mcp.client.callTool({
        name: 'data-tool_create-resource',
        arguments: args,
        _meta: { approvalId: approval.id },
      });
      expect((again._meta as { code: string }).code).toBe('approval_used');
    } finally {
      await mcp.close();
    }
  });
});
