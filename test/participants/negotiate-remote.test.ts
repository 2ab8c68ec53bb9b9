/**
 * A participant's action (a remote tool) through the real app on a real
 * Postgres, over REST negotiate and the conversation's MCP endpoint: the
 * same decision as a bundled tool's, no transaction held across the upstream
 * call (counted statements), quarantined actions hidden and refused (409
 * tool_definition_changed), an unreachable upstream answered 503 with
 * Retry-After (and not kept under an Idempotency-Key), a repeated key never
 * calling the upstream twice (also when two arrive at once), dryRun calling
 * nothing, `once` approvals replaying exactly that call once, and saveAs
 * feeding a bundled consumer. The participant here is an in-process
 * LoadedTool whose run answers as a connector does (test/support/remote-tool.ts).
 */
import type { Server } from 'node:http';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { request } from '../support/auth';
import { serverUrl } from '../support/db-server';
import { uniqueId } from '../support/ids';
import { type MintedKey, listen, mcpConnect, mintAgentKey, mintKey, stopListening } from '../support/identity';
import { FakeUpstream, installTools, quarantinedTool, remoteTool } from '../support/remote-tool';
import { sqlStatements } from '../support/sql-statements';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let alice: MintedKey;
let upstream: FakeUpstream;
let server: Server | undefined;
let base: string;

beforeAll(async () => {
  t = await createTestApp();
  upstream = new FakeUpstream();
  await installTools(t.registry, [remoteTool('echoes', upstream), quarantinedTool('held', upstream)]);
  alice = await mintKey(t.app, 'user', 'alice');
  ({ server, base } = await listen(t.app));
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

beforeEach(() => {
  upstream.calls.length = 0;
  upstream.mode = 'up';
  upstream.gate = undefined;
});

const ECHO = { action: 'echoes/echo', args: { message: 'hi' } };
const NOTE = { action: 'echoes/store-note', args: { message: 'remember' } };

/** Alice's conversation, with the levels given. */
async function conversation(levels: Record<string, number> = {}): Promise<string> {
  const id = uniqueId('remote');
  await request(t.app, alice.token).post('/conversations').send({ id }).expect(201);
  for (const [tool, level] of Object.entries(levels)) {
    await request(t.app, alice.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: `upgrade:${tool}:level-${level}` })
      .expect(200);
  }
  return id;
}

function negotiate(id: string, body: Record<string, unknown>, token = alice.token) {
  return request(t.app, token).post(`/conversations/${id}/negotiate`).send(body);
}

async function entries(id: string): Promise<string[]> {
  const res = await request(t.app, alice.token).get(`/conversations/${id}/audit`).query({ limit: 500 }).expect(200);
  return (
    res.body.entries as Array<{ event: string; tool?: string; action?: string; outcome: string; status?: number }>
  )
    .filter((e) => e.event === 'negotiate' && e.tool !== undefined && !e.action?.startsWith('upgrade:'))
    .map((e) => `${e.tool}/${e.action} ${e.outcome} ${e.status}`);
}

describe('REST negotiate', () => {
  it('runs a read upstream with the owner’s subject: one statement (the decision), entry queued', async () => {
    const id = await conversation();
    const sent = await sqlStatements(() =>
      negotiate(id, ECHO)
        .expect(200)
        .expect((res) => expect(res.body.output).toEqual({ content: [{ type: 'text', text: 'Echo: hi' }] })),
    );
    if (serverUrl()) expect(sent).toEqual(['decision_select']);
    expect(upstream.calls).toEqual([{ action: 'echo', args: { message: 'hi' }, owner: 'alice' }]);
    expect(await entries(id)).toEqual(['echoes/echo success 200']);
  });

  it('runs a write without a transaction: the decision, then its entry committed (two statements)', async () => {
    const id = await conversation({ echoes: 2 });
    const sent = await sqlStatements(() => negotiate(id, NOTE).expect(200));
    if (serverUrl()) {
      expect(sent.map((s) => s.split(/\s+/)[0])).toEqual(['decision_select', 'INSERT']);
      expect(sent).not.toContain('BEGIN');
    }
    expect(await entries(id)).toEqual(['echoes/store-note success 200']);
  });

  it('writes saveAs’s resource and the entry in one statement; a bundled tool consumes it', async () => {
    const id = await conversation({ echoes: 2, 'transform-tool': 2 });
    await negotiate(id, { ...ECHO, saveAs: 'bad name!' })
      .expect(400)
      .expect((res) =>
        expect(res.body).toMatchObject({ code: 'invalid_args', error: expect.stringMatching(/saveAs/) }),
      );
    const sent = await sqlStatements(() => negotiate(id, { ...ECHO, saveAs: 'words' }).expect(200));
    if (serverUrl()) expect(sent).toEqual(['decision_select', 'resource_upsert+audit_pending']);
    const saved = await request(t.app, alice.token).get(`/conversations/${id}/resources/words`).expect(200);
    expect(saved.body).toMatchObject({ data: 'Echo: hi', createdBy: 'echoes', updatedBy: 'echoes', version: 1 });
    await negotiate(id, {
      action: 'transform-tool/transform-resource',
      args: { name: 'words', operation: 'uppercase', target: 'shout' },
    }).expect(200);
    const shout = await request(t.app, alice.token).get(`/conversations/${id}/resources/shout`).expect(200);
    expect(shout.body).toMatchObject({ data: 'ECHO: HI', createdBy: 'transform-tool' });
    // structuredContent is saved when the result has one; saving again updates.
    await negotiate(id, { ...NOTE, saveAs: 'words' }).expect(200);
    const again = await request(t.app, alice.token).get(`/conversations/${id}/resources/words`).expect(200);
    expect(again.body).toMatchObject({ data: { noted: 'remember' }, version: 2, createdBy: 'echoes' });
    // A queued refusal's entry may be sealed after a write's that committed with its write: compared as a set.
    expect((await entries(id)).sort()).toEqual(
      [
        'echoes/echo invalid_args 400',
        'echoes/echo success 200',
        'transform-tool/transform-resource success 200',
        'echoes/store-note success 200',
      ].sort(),
    );
  });

  it('needs level 2 for saveAs: permission_required, and the `once` approval covers the call with that name', async () => {
    const id = await conversation();
    const refused = await negotiate(id, { ...ECHO, saveAs: 'greeting' }).expect(403);
    expect(refused.body).toMatchObject({ code: 'permission_required', approval: { status: 'pending' } });
    const approvalId = refused.body.approval.id as string;
    await request(t.app, alice.token)
      .post(`/conversations/${id}/approvals/${approvalId}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    await negotiate(id, { ...ECHO, approvalId }).expect(409);
    await negotiate(id, { ...ECHO, saveAs: 'greeting', approvalId }).expect(200);
    await negotiate(id, { ...ECHO, saveAs: 'greeting', approvalId })
      .expect(409)
      .expect((res) => expect(res.body.code).toBe('approval_used'));
    expect(upstream.calls).toHaveLength(1);
    const approval = await request(t.app, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200);
    expect(approval.body).toMatchObject({ status: 'used', action: 'echo saveAs:greeting' });
  });

  it('refuses a quarantined action named explicitly with 409 tool_definition_changed, audited, never called', async () => {
    const id = await conversation();
    for (const body of [
      { action: 'echoes/changed-tool', args: { message: 'x' } },
      { action: 'changed-tool', tool: 'echoes', args: { message: 'x' } },
      { action: 'held_echo', args: { message: 'x' } },
    ]) {
      await negotiate(id, body)
        .expect(409)
        .expect((res) => expect(res.body).toMatchObject({ success: false, code: 'tool_definition_changed' }));
    }
    await negotiate(id, { action: 'changed-tool', args: { message: 'x' } }).expect(404);
    expect(upstream.calls).toEqual([]);
    expect(await entries(id)).toEqual([
      'echoes/changed-tool tool_definition_changed 409',
      'echoes/changed-tool tool_definition_changed 409',
      'held/echo tool_definition_changed 409',
    ]);
  });

  it('answers an unreachable upstream 503 with Retry-After; with a key it is not kept, and a retry runs', async () => {
    const id = await conversation({ echoes: 2 });
    upstream.mode = 'down';
    const down = await negotiate(id, NOTE).set('Idempotency-Key', 'k-down').expect(503);
    expect(down.headers['retry-after']).toBe('7');
    expect(down.headers['content-type']).toMatch(/^application\/json/);
    expect(down.body).toMatchObject({ success: false, code: 'participant_unavailable', retryAfterSeconds: 7 });
    upstream.mode = 'up';
    const up = await negotiate(id, NOTE).set('Idempotency-Key', 'k-down').expect(200);
    expect(up.headers['idempotent-replayed']).toBeUndefined();
    await negotiate(id, NOTE).set('Idempotency-Key', 'k-down').expect(200).expect('Idempotent-Replayed', 'true');
    expect(upstream.calls).toHaveLength(1);
    expect((await entries(id)).sort()).toEqual([
      'echoes/store-note participant_unavailable 503',
      'echoes/store-note success 200',
    ]);
  });

  it('never calls the upstream twice for one Idempotency-Key, also when two arrive at once', async () => {
    const id = await conversation({ echoes: 2 });
    let open!: () => void;
    upstream.gate = new Promise<void>((resolve) => (open = resolve));
    const reached = upstream.arrived();
    const first = negotiate(id, NOTE)
      .set('Idempotency-Key', 'k-race')
      .then((r) => r);
    await reached;
    // The first is at the upstream (its claim committed, no transaction open): the second is told it runs.
    const second = await negotiate(id, NOTE).set('Idempotency-Key', 'k-race');
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'conflict' });
    open();
    expect((await first).status).toBe(200);
    await negotiate(id, NOTE).set('Idempotency-Key', 'k-race').expect(200).expect('Idempotent-Replayed', 'true');
    await negotiate(id, { ...NOTE, args: { message: 'else' } })
      .set('Idempotency-Key', 'k-race')
      .expect(422);
    expect(upstream.calls).toHaveLength(1);
  });

  it('keeps an upstream error under a key: it ran there, so a retry is answered from it', async () => {
    const id = await conversation({ echoes: 2 });
    upstream.mode = 'error';
    await negotiate(id, NOTE).set('Idempotency-Key', 'k-error').expect(500);
    upstream.mode = 'up';
    await negotiate(id, NOTE).set('Idempotency-Key', 'k-error').expect(500).expect('Idempotent-Replayed', 'true');
    expect(upstream.calls).toHaveLength(1);
  });

  it('calls nothing on a dry run, and applies the agent key’s ceiling and the policy as for any tool', async () => {
    const id = await conversation({ echoes: 2 });
    await negotiate(id, { ...NOTE, dryRun: true })
      .expect(200)
      .expect((res) => expect(res.body.output).toBeUndefined());
    const agent = await mintAgentKey(t.app, alice.token, id, { maxLevel: 1 });
    await negotiate(id, NOTE, agent.token)
      .expect(403)
      .expect((res) => expect(res.body.code).toBe('level_ceiling'));
    await negotiate(id, { ...ECHO, saveAs: 'x' }, agent.token)
      .expect(403)
      .expect((res) => expect(res.body.code).toBe('level_ceiling'));
    const denying = uniqueId('remote');
    await request(t.app, alice.token)
      .post('/conversations')
      .send({ id: denying, policy: { deny: ['echoes/*'] } })
      .expect(201);
    await negotiate(denying, ECHO)
      .expect(403)
      .expect((res) => expect(res.body.code).toBe('denied'));
    expect(upstream.calls).toEqual([]);
  });
});

describe('saveAs with an Idempotency-Key', () => {
  it('saves once: the resource, its entry and the kept outcome in one transaction; a replay writes nothing', async () => {
    const id = await conversation({ echoes: 2 });
    const sent = await sqlStatements(() =>
      negotiate(id, { ...NOTE, saveAs: 'kept' })
        .set('Idempotency-Key', 'k-save')
        .expect(200),
    );
    if (serverUrl()) {
      expect(sent.map((s) => s.split(/\s+/)[0]!.replace(/;$/, ''))).toEqual([
        'idempotency_find',
        'decision_select',
        'idempotency_claim',
        'BEGIN',
        'resource_upsert',
        'idempotency_keep',
        'COMMIT',
      ]);
    }
    await negotiate(id, { ...NOTE, saveAs: 'kept' })
      .set('Idempotency-Key', 'k-save')
      .expect(200)
      .expect('Idempotent-Replayed', 'true');
    const kept = await request(t.app, alice.token).get(`/conversations/${id}/resources/kept`).expect(200);
    expect(kept.body).toMatchObject({ data: { noted: 'remember' }, version: 1 });
    expect(upstream.calls).toHaveLength(1);
    expect(await entries(id)).toEqual(['echoes/store-note success 200']);
  });
});

describe('what callers are shown', () => {
  it('hides quarantined actions from non-admins everywhere; admins see them marked in /tools', async () => {
    const mine = await request(t.app, alice.token).get('/tools').expect(200);
    const echoes = (mine.body.tools as Array<{ name: string; capabilities: string[] }>).find(
      (x) => x.name === 'echoes',
    );
    expect(echoes?.capabilities).toEqual(['echo', 'store-note']);
    expect(JSON.stringify(mine.body)).not.toMatch(/changed-tool|"held"/);
    await request(t.app, alice.token).get('/tools/held').expect(404);
    const admins = await request(t.app).get('/tools/echoes').expect(200);
    expect(admins.body.actions).toContainEqual(
      expect.objectContaining({ name: 'changed-tool', status: 'quarantined' }),
    );
    expect(
      (admins.body.actions as Array<{ name: string; status?: string }>).find((a) => a.name === 'echo'),
    ).not.toHaveProperty('status');
    for (const format of ['openai', 'anthropic', 'mcp', 'canonical']) {
      const defs = await request(t.app).get('/tools/definitions').query({ format }).expect(200);
      expect(JSON.stringify(defs.body)).toContain('echoes');
      expect(JSON.stringify(defs.body)).not.toMatch(/changed-tool|held/);
    }
    const prompt = await request(t.app).get('/tools/prompt').expect(200);
    expect(prompt.text).toContain('echoes/echo');
    expect(prompt.text).not.toMatch(/changed-tool|held\//);
    const id = await conversation();
    const listed = await negotiate(id, { action: 'list-tools' }).expect(200);
    expect(JSON.stringify(listed.body)).not.toContain('changed-tool');
  });
});

describe('the conversation’s MCP endpoint', () => {
  it('lists and calls a participant’s actions as negotiate decides them', async () => {
    const id = await conversation({ echoes: 2 });
    const mcp = await mcpConnect(base, id, alice.token);
    try {
      const { tools } = await mcp.client.listTools();
      const names = tools.map((x) => x.name);
      expect(names).toEqual(expect.arrayContaining(['echoes_echo', 'echoes_store-note']));
      expect(names).not.toContain('echoes_changed-tool');
      expect(names).not.toContain('held_echo');

      const ok = await mcp.client.callTool({ name: 'echoes_echo', arguments: { message: 'hi' } });
      expect(ok.isError).toBeFalsy();
      // The upstream's result as it gave it: its content, no structuredContent of the gateway's making.
      expect(ok.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
      expect(ok.structuredContent).toBeUndefined();
      const noted = await mcp.client.callTool({ name: 'echoes_store-note', arguments: { message: 'n' } });
      expect(noted.structuredContent).toEqual({ noted: 'n' });

      const held = await mcp.client.callTool({ name: 'echoes_changed-tool', arguments: { message: 'x' } });
      expect(held.isError).toBe(true);
      expect(JSON.stringify(held.content)).toContain('[code: tool_definition_changed]');

      upstream.mode = 'down';
      const down = await mcp.client.callTool({ name: 'echoes_echo', arguments: { message: 'hi' } });
      expect(down.isError).toBe(true);
      expect(JSON.stringify(down.content)).toContain('[code: participant_unavailable]');
      expect(down._meta).toMatchObject({ code: 'participant_unavailable', retryAfterSeconds: 7 });
      upstream.mode = 'up';

      const saved = await mcp.client.callTool({
        name: 'echoes_store-note',
        arguments: { message: 'kept' },
        _meta: { saveAs: 'note' },
      });
      expect(saved.isError).toBeFalsy();
      const note = await request(t.app, alice.token).get(`/conversations/${id}/resources/note`).expect(200);
      expect(note.body).toMatchObject({ data: { noted: 'kept' }, createdBy: 'echoes' });
      expect(upstream.calls.map((c) => c.action)).toEqual(['echo', 'store-note', 'store-note']);
    } finally {
      await mcp.close();
    }
  });

  it('serves a 2026-07-28 client (the fast path): saveAs in _meta, participant_unavailable as a tool result', async () => {
    const id = await conversation({ echoes: 2 });
    const client = new ClientV2(
      { name: 'remote-v2', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new TransportV2(new URL(`${base}/conversations/${id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${alice.token}` } },
      }),
    );
    try {
      const saved = await client.callTool({
        name: 'echoes_echo',
        arguments: { message: 'modern' },
        _meta: { saveAs: 'modern' },
      });
      expect(saved.isError).toBeFalsy();
      const res = await request(t.app, alice.token).get(`/conversations/${id}/resources/modern`).expect(200);
      expect(res.body).toMatchObject({ data: 'Echo: modern', createdBy: 'echoes' });
      upstream.mode = 'down';
      const down = await client.callTool({ name: 'echoes_echo', arguments: { message: 'x' } });
      expect(down.isError).toBe(true);
      expect(JSON.stringify(down.content)).toContain('[code: participant_unavailable]');
      const held = await client.callTool({ name: 'echoes_changed-tool', arguments: { message: 'x' } });
      expect(JSON.stringify(held.content)).toContain('[code: tool_definition_changed]');
    } finally {
      await client.close();
    }
  });
});
