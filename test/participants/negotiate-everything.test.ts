/**
 * End to end: @modelcontextprotocol/server-everything over Streamable HTTP,
 * registered over REST as a participant, called through REST negotiate and
 * through the conversation's MCP endpoint (the official SDK client), behind
 * a counting proxy that tells how often the upstream was really called:
 * success, dryRun (no call), a `once` approval (one call), an
 * Idempotency-Key (one call, also for two requests at once), saveAs (the
 * structuredContent in the shared context), an unreachable upstream (503
 * with Retry-After, then back), and a changed definition (quarantined:
 * hidden, 409, until an admin approves it).
 */
import type { Server } from 'node:http';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, listen, mcpConnect, mintKey, stopListening } from '../support/identity';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { CountingProxy } from './support/counting-proxy';
import { type RunningUpstream, startEverythingHttp } from './support/upstreams';

let t: TestApp;
let everything: RunningUpstream;
let proxy: CountingProxy;
let alice: MintedKey;
let server: Server | undefined;
let base: string;
const name = `ev-${uniqueId('p')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .slice(-12)}`.replace(/-+$/, '');

beforeAll(async () => {
  everything = await startEverythingHttp();
  proxy = new CountingProxy(new URL(everything.url));
  await proxy.start();
  t = await createTestApp();
  alice = await mintKey(t.app, 'user', uniqueId('alice'));
  ({ server, base } = await listen(t.app));
  const res = await request(t.app)
    .post('/participants')
    .send({ name, transport: 'mcp-http', url: proxy.url, levels: { 'get-sum': 2 } });
  expect(res.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await stopListening(server);
  await t?.close();
  await proxy?.stop();
  await everything?.stop();
});

async function conversation(levels: Record<string, number> = {}): Promise<string> {
  const id = uniqueId('ev');
  await request(t.app, alice.token).post('/conversations').send({ id }).expect(201);
  for (const [tool, level] of Object.entries(levels)) {
    await negotiate(id, { action: `upgrade:${tool}:level-${level}` }).expect(200);
  }
  return id;
}

function negotiate(id: string, body: Record<string, unknown>) {
  return request(t.app, alice.token).post(`/conversations/${id}/negotiate`).send(body);
}

const echo = (message: string) => ({ action: `${name}/echo`, args: { message } });
const sum = { action: `${name}/get-sum`, args: { a: 2, b: 3 } };

it('calls echo through REST negotiate and the MCP endpoint; a dry run calls nothing', async () => {
  const id = await conversation();
  const before = proxy.calls.length;
  const res = await negotiate(id, echo('hi')).expect(200);
  expect(res.body).toMatchObject({
    success: true,
    output: { content: [{ type: 'text', text: 'Echo: hi' }] },
    routing: { tool: name, action: 'echo', explicit: true },
  });
  await negotiate(id, { ...echo('dry'), dryRun: true }).expect(200);
  expect(proxy.calls.slice(before)).toEqual(['echo']);

  const mcp = await mcpConnect(base, id, alice.token);
  try {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((x) => x.name)).toContain(`${name}_echo`);
    const called = await mcp.client.callTool({ name: `${name}_echo`, arguments: { message: 'over mcp' } });
    expect(called.isError).toBeFalsy();
    expect(called.content).toEqual([{ type: 'text', text: 'Echo: over mcp' }]);
    // A tool with an outputSchema: its structuredContent handed out as the upstream gave it (the client checks it).
    const listed = tools.find((x) => x.name === `${name}_get-structured-content`);
    expect(listed?.outputSchema).toMatchObject({ type: 'object' });
    const structured = await mcp.client.callTool({
      name: `${name}_get-structured-content`,
      arguments: { location: 'New York' },
    });
    expect(structured.isError).toBeFalsy();
    expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) });
  } finally {
    await mcp.close();
  }
  expect(proxy.calls.slice(before)).toEqual(['echo', 'echo', 'get-structured-content']);
});

it('replays a `once`-approved call upstream exactly once', async () => {
  const id = await conversation();
  const refused = await negotiate(id, sum).expect(403);
  const approvalId = refused.body.approval.id as string;
  await request(t.app, alice.token)
    .post(`/conversations/${id}/approvals/${approvalId}/approve`)
    .send({ scope: 'once' })
    .expect(200);
  const before = proxy.calls.length;
  const ran = await negotiate(id, { ...sum, approvalId }).expect(200);
  expect(JSON.stringify(ran.body.output)).toContain('5');
  await negotiate(id, { ...sum, approvalId })
    .expect(409)
    .expect((r) => expect(r.body.code).toBe('approval_used'));
  expect(proxy.calls.slice(before)).toEqual(['get-sum']);
});

it('calls the upstream once per Idempotency-Key, also for two requests at once', async () => {
  const id = await conversation({ [name]: 2 });
  const before = proxy.calls.length;
  const [a, b] = await Promise.all([
    negotiate(id, sum).set('Idempotency-Key', 'k-1'),
    negotiate(id, sum).set('Idempotency-Key', 'k-1'),
  ]);
  expect([a.status, b.status].sort()).toEqual(a.status === b.status ? [200, 200] : [200, 409]);
  await negotiate(id, sum).set('Idempotency-Key', 'k-1').expect(200).expect('Idempotent-Replayed', 'true');
  expect(proxy.calls.slice(before)).toEqual(['get-sum']);
});

it('saves structuredContent with saveAs, created by the participant', async () => {
  const id = await conversation({ [name]: 2 });
  await negotiate(id, {
    action: `${name}/get-structured-content`,
    args: { location: 'Chicago' },
    saveAs: 'weather',
  }).expect(200);
  const saved = await request(t.app, alice.token).get(`/conversations/${id}/resources/weather`).expect(200);
  expect(saved.body).toMatchObject({
    data: { temperature: expect.any(Number), conditions: expect.any(String), humidity: expect.any(Number) },
    createdBy: name,
  });
});

it('answers 503 participant_unavailable with Retry-After while the upstream is away, and runs once it is back', async () => {
  const id = await conversation();
  await proxy.stop();
  try {
    const down = await negotiate(id, echo('away')).expect(503);
    expect(Number(down.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(down.body).toMatchObject({ success: false, code: 'participant_unavailable' });
    const mcp = await mcpConnect(base, id, alice.token);
    try {
      const refused = await mcp.client.callTool({ name: `${name}_echo`, arguments: { message: 'away' } });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('[code: participant_unavailable]');
    } finally {
      await mcp.close();
    }
  } finally {
    await proxy.start();
  }
  await waitFor('the upstream answers again', async () => (await negotiate(id, echo('back'))).status === 200);
});

it('quarantines a changed definition: hidden, 409 tool_definition_changed, until an admin approves it', async () => {
  const id = await conversation();
  // The upstream's echo now differs from what was pinned (as if its description had changed).
  await t.db.pool.query(
    `UPDATE participant_actions SET pinned_digest = 'changed' WHERE participant = $1 AND upstream_name = 'echo'`,
    [name],
  );
  await request(t.app).post(`/participants/${name}/refresh`).expect(200);
  const before = proxy.calls.length;
  await negotiate(id, echo('x'))
    .expect(409)
    .expect((r) => expect(r.body.code).toBe('tool_definition_changed'));
  const mine = await request(t.app, alice.token).get(`/tools/${name}`).expect(200);
  expect(mine.body.capabilities).not.toContain('echo');
  const admins = await request(t.app).get(`/tools/${name}`).expect(200);
  expect(admins.body.actions).toContainEqual(expect.objectContaining({ name: 'echo', status: 'quarantined' }));
  const mcp = await mcpConnect(base, id, alice.token);
  try {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((x) => x.name)).not.toContain(`${name}_echo`);
    const refused = await mcp.client.callTool({ name: `${name}_echo`, arguments: { message: 'x' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('[code: tool_definition_changed]');
  } finally {
    await mcp.close();
  }
  expect(proxy.calls.slice(before)).toEqual([]);
  await request(t.app).post(`/participants/${name}/actions/echo/approve`).expect(200);
  await negotiate(id, echo('approved')).expect(200);
});
