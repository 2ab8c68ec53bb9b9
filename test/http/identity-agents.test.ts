/**
 * Agents (API.md, Identity and access), over real HTTP and the official MCP
 * SDK client: an agent cannot raise its own tools' levels (403
 * permission_required, nothing applied) until the owner does; the permission
 * history names who changed a level; an agent key's maxLevel is a ceiling no
 * tool level lifts (403 level_ceiling, no approval) and MCP tools/list leaves
 * out what is above it, as do its GET /tools/definitions.
 */
import type { Server } from 'node:http';
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
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
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

let t: TestApp;
let server: Server | undefined;
let app: string;
let alice: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base: app } = await listen(t.app));
  alice = await mintKey(app, 'user', 'alice');
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
});

type Body = Record<string, unknown>;

function negotiate(token: string, conversationId: string, body: Body): supertest.Test {
  return request(app, token).post(`/conversations/${conversationId}/negotiate`).send(body);
}

async function levelOf(conversationId: string, tool: string): Promise<{ level: number; source: string }> {
  const res = await request(app, alice.token).get(`/conversations/${conversationId}/permissions`).expect(200);
  const row = (res.body.tools as { tool: string; level: number; source: string }[]).find((r) => r.tool === tool);
  if (!row) throw new Error(`no permission row for ${tool}`);
  return { level: row.level, source: row.source };
}

async function history(
  conversationId: string,
): Promise<{ tool: string; fromLevel: number; toLevel: number; actor: string }[]> {
  const res = await request(app, alice.token).get(`/conversations/${conversationId}/permissions/history`).expect(200);
  return (res.body.events as { tool: string; fromLevel: number; toLevel: number; actor: string }[]).map(
    ({ tool, fromLevel, toLevel, actor }) => ({ tool, fromLevel, toLevel, actor }),
  );
}

const WRITE = { action: 'data-tool/create-resource', args: { name: 'note', data: { by: 'agent' } } };

describe("an agent's self-upgrade", () => {
  it('is refused as permission_required and not applied; the write runs once the owner upgrades', async () => {
    const id = uniqueId('self-upgrade');
    await createConversation(app, alice.token, id);
    const agent = await mintAgentKey(app, alice.token, id);

    const upgrade = await negotiate(agent.token, id, { action: 'upgrade:data-tool:level-2' });
    expect(upgrade.status).toBe(403);
    expect(upgrade.body).toEqual(
      expect.objectContaining({ success: false, code: 'permission_required', requiresApproval: true }),
    );
    expect(upgrade.body.approvalReason).toMatch(/^Permission upgrade required/);
    expect(await levelOf(id, 'data-tool')).toEqual({ level: 1, source: 'default' });
    expect(await history(id)).toEqual([]);

    // Still level 1: the agent's write is refused as before, and nothing is written.
    const refused = await negotiate(agent.token, id, WRITE);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(
      expect.objectContaining({ success: false, code: 'permission_required', requiresApproval: true }),
    );
    expect(refused.body.approvalReason).toMatch(/^Permission upgrade required/);
    expectProblem(await request(app, alice.token).get(`/conversations/${id}/resources/note`), 404, 'not_found');

    // Nor through the REST endpoint.
    expectProblem(
      await request(app, agent.token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }),
      403,
      'forbidden',
    );
    expect(await levelOf(id, 'data-tool')).toEqual({ level: 1, source: 'default' });

    // The owner upgrades: now the agent's write runs.
    const owner = await negotiate(alice.token, id, { action: 'upgrade:data-tool:level-2' });
    expect(owner.status).toBe(200);
    expect(owner.body.output).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });
    expect(await levelOf(id, 'data-tool')).toEqual({ level: 2, source: 'explicit' });
    const ran = await negotiate(agent.token, id, WRITE);
    expect(ran.status).toBe(200);
    expect(ran.body.success).toBe(true);
    const note = await request(app, agent.token).get(`/conversations/${id}/resources/note`).expect(200);
    expect(note.body.data).toEqual({ by: 'agent' });
    expect(note.body.createdBy).toBe('data-tool');
  });

  it('permission history names the principal: user:SUBJECT, admin:SUBJECT', async () => {
    const id = uniqueId('history');
    await createConversation(app, alice.token, id);
    const agent = await mintAgentKey(app, alice.token, id);
    const root = await mintKey(app, 'admin', 'root');

    // The owner, through negotiate and through PUT.
    expect((await negotiate(alice.token, id, { action: 'upgrade:data-tool:level-2' })).status).toBe(200);
    await request(app, alice.token)
      .put(`/conversations/${id}/permissions/transform-tool`)
      .send({ level: 2 })
      .expect(200);
    // The ADMIN_API_KEY admin, through PUT and through negotiate.
    await request(app, TEST_ADMIN_TOKEN)
      .put(`/conversations/${id}/permissions/export-tool`)
      .send({ level: 3 })
      .expect(200);
    expect((await negotiate(TEST_ADMIN_TOKEN, id, { action: 'upgrade:data-tool:level-3' })).status).toBe(200);
    // A minted admin key: its subject.
    await request(app, root.token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 1 }).expect(200);
    // The agent's attempts leave no row.
    expect((await negotiate(agent.token, id, { action: 'upgrade:analytics-tool:level-2' })).status).toBe(403);
    expect(
      (await request(app, agent.token).put(`/conversations/${id}/permissions/analytics-tool`).send({ level: 2 }))
        .status,
    ).toBe(403);

    expect(await history(id)).toEqual([
      { tool: 'data-tool', fromLevel: 1, toLevel: 2, actor: 'user:alice' },
      { tool: 'transform-tool', fromLevel: 1, toLevel: 2, actor: 'user:alice' },
      { tool: 'export-tool', fromLevel: 1, toLevel: 3, actor: 'admin:admin' },
      { tool: 'data-tool', fromLevel: 2, toLevel: 3, actor: 'admin:admin' },
      { tool: 'data-tool', fromLevel: 3, toLevel: 1, actor: 'admin:root' },
    ]);
  });
});

describe("an agent key's maxLevel", () => {
  let id: string;
  let capped: MintedKey;
  let free: MintedKey;

  beforeAll(async () => {
    id = uniqueId('ceiling');
    await createConversation(app, alice.token, id);
    await request(app, alice.token)
      .put(`/conversations/${id}/resources/doc`)
      .send({ data: [1, 2, 3] })
      .expect(201);
    capped = await mintAgentKey(app, alice.token, id, { maxLevel: 1, label: 'read-only agent' });
    free = await mintAgentKey(app, alice.token, id);
    // The owner raised data-tool to write and export-tool to execute: the ceiling still holds.
    await request(app, alice.token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }).expect(200);
    await request(app, alice.token).put(`/conversations/${id}/permissions/export-tool`).send({ level: 3 }).expect(200);
  });

  it('is in the key and in GET /me', async () => {
    expect(capped).toEqual(expect.objectContaining({ role: 'agent', conversationId: id, maxLevel: 1 }));
    const me = await request(app, capped.token).get('/me').expect(200);
    expect(me.body).toEqual({ subject: 'alice', role: 'agent', keyId: capped.id, conversationId: id, maxLevel: 1 });
    const other = await request(app, free.token).get('/me').expect(200);
    expect(other.body).toEqual({ subject: 'alice', role: 'agent', keyId: free.id, conversationId: id });
  });

  it('refuses an action above it with 403 level_ceiling and no approval, whatever the tool level', async () => {
    for (const body of [WRITE, { action: 'data-tool/delete-resource', args: { name: 'doc' } }]) {
      const res = await negotiate(capped.token, id, body);
      expect(res.status).toBe(403);
      expect(res.body).toEqual(expect.objectContaining({ success: false, code: 'level_ceiling' }));
      expect(res.body).not.toHaveProperty('requiresApproval');
      expect(res.body).not.toHaveProperty('approvalReason');
      expect(res.body).not.toHaveProperty('approval');
      expect(res.body).not.toHaveProperty('output');
    }
    // Nothing ran.
    const doc = await request(app, alice.token).get(`/conversations/${id}/resources/doc`).expect(200);
    expect(doc.body).toEqual(expect.objectContaining({ data: [1, 2, 3], version: 1 }));
    expectProblem(await request(app, alice.token).get(`/conversations/${id}/resources/note`), 404, 'not_found');
    // The same call from the key without a ceiling runs (the tool level allows it).
    expect((await negotiate(free.token, id, { ...WRITE, args: { name: 'free-note', data: 1 } })).status).toBe(200);
  });

  it('lets a level-1 action run', async () => {
    const res = await negotiate(capped.token, id, { action: 'data-tool/read-resource', args: { name: 'doc' } });
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual(expect.objectContaining({ name: 'doc', data: [1, 2, 3] }));
    const sum = await negotiate(capped.token, id, { action: 'example-tool/greet', args: { name: 'capped' } });
    expect(sum.status).toBe(200);
  });

  it('MCP tools/list for the key leaves out every action above it', async () => {
    const rest = await request(app, alice.token).get('/tools').expect(200);
    const actions = (rest.body.tools as { actions: { providerName: string; level: number }[] }[]).flatMap(
      (tool) => tool.actions,
    );
    const levelOne = actions.filter((a) => a.level === 1).map((a) => a.providerName);
    expect(levelOne.length).toBeGreaterThan(0);
    expect(actions.length).toBeGreaterThan(levelOne.length);

    const cappedMcp = await mcpConnect(app, id, capped.token);
    const freeMcp = await mcpConnect(app, id, free.token);
    try {
      const cappedNames = (await cappedMcp.client.listTools()).tools.map((x) => x.name);
      expect([...cappedNames].sort()).toEqual([...levelOne].sort());
      const freeNames = (await freeMcp.client.listTools()).tools.map((x) => x.name);
      expect([...freeNames].sort()).toEqual(actions.map((a) => a.providerName).sort());
      // And a call above the ceiling through MCP does not run either.
      const call = await cappedMcp.client.callTool({
        name: 'data-tool_create-resource',
        arguments: { name: 'via-mcp', data: 1 },
      });
      expect(call.isError).toBe(true);
      expectProblem(await request(app, alice.token).get(`/conversations/${id}/resources/via-mcp`), 404, 'not_found');
    } finally {
      await cappedMcp.close();
      await freeMcp.close();
    }
  });

  it("gives an agent with maxLevel 1 only level-1 definitions, like MCP's tools/list", async () => {
    const id = uniqueId('conv');
    await request(t.app).post('/conversations').send({ id }).expect(201);
    const agent = await mintAgentKey(t.app, TEST_ADMIN_TOKEN, id, { maxLevel: 1 });
    const mine = await request(t.app, agent.token)
      .get(`/tools/definitions?format=mcp&conversationId=${id}`)
      .expect(200);
    const all = await request(t.app).get(`/tools/definitions?format=mcp&conversationId=${id}`).expect(200);
    const names = (r: { body: { tools: { name: string; annotations: { readOnlyHint: boolean } }[] } }) =>
      r.body.tools.map((d) => d.name);
    expect(names(all).length).toBeGreaterThan(names(mine).length);
    expect(
      (mine.body as { tools: { annotations: { readOnlyHint: boolean } }[] }).tools.every(
        (d) => d.annotations.readOnlyHint,
      ),
    ).toBe(true);
  });

  it.each([[4], [0], [-1], [1.5]])('POST agent-keys with maxLevel %j → 400', async (maxLevel) => {
    const res = await request(app, alice.token).post(`/conversations/${id}/agent-keys`).send({ maxLevel });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.token).toBeUndefined();
  });

  it('POST agent-keys with maxLevel 1, 2 or 3 is accepted', async () => {
    for (const maxLevel of [1, 2, 3]) {
      const key = await mintAgentKey(app, alice.token, id, { maxLevel });
      expect(key.maxLevel).toBe(maxLevel);
    }
  });
});
