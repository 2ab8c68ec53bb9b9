/**
 * GET /metrics (API.md, Operations) scraped after real calls through REST and
 * the official MCP client: counts and labels of negotiate_calls_total,
 * negotiate_duration_seconds and http_request_duration_seconds, the gauges
 * read at scrape time, no caller-chosen text in any label; and the request
 * log line of a negotiate call.
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TEST_ADMIN_TOKEN, anonymous, bearer, request } from '../support/auth';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';

let t: TestApp;
let server: HttpServer;
let base: string;

beforeAll(async () => {
  // A Host list in force: the scrape below comes by another name, as Prometheus does by pod IP.
  t = await createTestApp({ ALLOWED_HOSTS: '127.0.0.1' });
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (server) {
    await closeMcpSessions(t.services);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
  await t?.close();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format's samples (comments skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await anonymous(t.app).get('/metrics').set('Host', '10.1.2.3:3000').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return { text: res.text, samples: parse(res.text) };
}

/** The value of the one sample with exactly these labels (0 when absent: a counter never incremented). */
function value(samples: Sample[], name: string, labels: Record<string, string>): number {
  const found = samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  expect(found.length).toBeLessThanOrEqual(1);
  return found[0]?.value ?? 0;
}

async function negotiate(
  conversationId: string,
  body: object,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
  return { status: res.status, body: res.body as Record<string, unknown> };
}

async function mcpCall(
  conversationId: string,
  name: string,
  args: Record<string, unknown>,
  at = base,
): Promise<CallToolResult> {
  const transport = new StreamableHTTPClientTransport(new URL(`${at}/conversations/${conversationId}/mcp`), {
    requestInit: { headers: bearer() },
  });
  const client = new Client({ name: 'metrics-test-client', version: '1.0.0' });
  await client.connect(transport);
  try {
    return (await client.callTool({ name, arguments: args })) as CallToolResult;
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  }
}

const NEGOTIATE_ROUTE = '/conversations/{conversationId}/negotiate';

describe('GET /metrics', () => {
  it('counts negotiate calls by tool, action and outcome, from REST and MCP, with bounded labels', async () => {
    const before = (await scrape()).samples;
    const id = uniqueId('metrics');
    const hostile = uniqueId('hostile-action-text');

    expect((await negotiate(id, { action: 'example-tool/greet', args: { name: 'a' } })).status).toBe(200);
    expect((await negotiate(id, { action: 'greet', args: { name: 'b' } })).status).toBe(200);
    const refused = await negotiate(id, {
      action: 'data-tool/create-resource',
      args: { name: `${id}-res`, data: 1 },
    });
    expect(refused).toMatchObject({ status: 403, body: { code: 'permission_required' } });
    expect((await negotiate(id, { action: hostile })).body.code).toBe('no_tool');
    expect((await negotiate(id, { action: 'greet', tool: `${hostile}-tool` })).body.code).toBe('unknown_tool');
    expect((await negotiate(id, { action: 'list-tools' })).status).toBe(200);
    const viaMcp = await mcpCall(id, 'example-tool_greet', { name: 'c' });
    expect(viaMcp.isError).toBeFalsy();
    await request(t.app).get(`/no/such/path/${id}`).expect(404);

    const { text, samples } = await scrape();
    const delta = (name: string, labels: Record<string, string>): number =>
      value(samples, name, labels) - value(before, name, labels);

    const calls = 'negotiate_calls_total';
    expect(delta(calls, { tool: 'example-tool', action: 'greet', outcome: 'ok' })).toBe(3);
    expect(delta(calls, { tool: 'data-tool', action: 'create-resource', outcome: 'permission_required' })).toBe(1);
    expect(delta(calls, { tool: '_unrouted', action: '_unrouted', outcome: 'no_tool' })).toBe(1);
    expect(delta(calls, { tool: '_unrouted', action: '_unrouted', outcome: 'unknown_tool' })).toBe(1);
    expect(delta(calls, { tool: '_gateway', action: 'list-tools', outcome: 'ok' })).toBe(1);
    const durations = 'negotiate_duration_seconds_count';
    expect(delta(durations, { tool: 'example-tool', action: 'greet' })).toBe(3);
    expect(delta(durations, { tool: 'data-tool', action: 'create-resource' })).toBe(1);
    expect(value(samples, 'negotiate_duration_seconds_sum', { tool: 'example-tool', action: 'greet' })).toBeGreaterThan(
      0,
    );

    const http = 'http_request_duration_seconds_count';
    expect(delta(http, { method: 'POST', route: NEGOTIATE_ROUTE, status: '200' })).toBe(3);
    expect(delta(http, { method: 'POST', route: NEGOTIATE_ROUTE, status: '403' })).toBe(1);
    expect(delta(http, { method: 'POST', route: NEGOTIATE_ROUTE, status: '404' })).toBe(2);
    expect(delta(http, { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(
      delta(http, { method: 'POST', route: '/conversations/{conversationId}/mcp', status: '200' }),
    ).toBeGreaterThanOrEqual(2);

    // Bounded labels: the loaded tools and the two fixed names; nothing the caller typed.
    const tools = new Set([...t.services.catalog.toolViews().map((v) => v.name), '_gateway', '_unrouted']);
    for (const s of samples.filter((x) => x.name.startsWith('negotiate_'))) expect(tools).toContain(s.labels.tool);
    expect(text).not.toContain(id);
    expect(text).not.toContain(hostile);
    expect(text).not.toContain(TEST_ADMIN_TOKEN);
  });

  it('reads approvals_pending from the database at scrape time, and the pool by state', async () => {
    const id = uniqueId('metrics-approval');
    // What the database holds before (a scrape within the last second may still show an older count).
    const counted = await t.db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM approvals WHERE status = 'pending'",
    );
    const before = counted.rows[0]!.n;
    const refused = await negotiate(id, { action: 'data-tool/create-resource', args: { name: 'r', data: 1 } });
    const approvalId = (refused.body.approval as { id: string }).id;
    // Read from the database at most once a second: a later scrape shows it.
    await waitFor(
      'the new request counted',
      async () => value((await scrape()).samples, 'approvals_pending', {}) === before + 1,
    );
    // Decided through the API (another replica could as well): a later scrape reads it.
    await request(t.app).post(`/conversations/${id}/approvals/${approvalId}/reject`).send({}).expect(200);
    let after: Sample[] = [];
    await waitFor('the decision counted', async () => {
      after = (await scrape()).samples;
      return value(after, 'approvals_pending', {}) === before;
    });

    // Nothing waits for a connection in an idle app (the scrape's own count query is not seen: it is read first).
    expect(value(after, 'db_pool_connections', { state: 'waiting' })).toBe(0);
    // The pool as it is at scrape time: a connection held by someone shows as busy.
    const held = await t.db.pool.connect();
    let whileHeld: Sample[];
    try {
      whileHeld = (await scrape()).samples;
    } finally {
      held.release();
    }
    const idle = value(whileHeld, 'db_pool_connections', { state: 'idle' });
    const busy = value(whileHeld, 'db_pool_connections', { state: 'busy' });
    expect(busy).toBeGreaterThanOrEqual(1);
    expect(idle + busy).toBeLessThanOrEqual(5); // the test app's pool size
    expect(value(whileHeld, 'db_pool_connections', { state: 'waiting' })).toBeGreaterThanOrEqual(0);
    expect(
      whileHeld
        .filter((x) => x.name === 'db_pool_connections')
        .map((x) => x.labels.state)
        .sort(),
    ).toEqual(['busy', 'idle', 'waiting']);
    // The default process metrics.
    expect(after.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(after.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('is absent with METRICS_ENABLED=false', async () => {
    const off = await createTestApp({ METRICS_ENABLED: 'false' }, { replicaOf: t });
    try {
      await anonymous(off.app).get('/metrics').expect(404);
    } finally {
      await off.close();
    }
  });
});

describe('request logs', () => {
  it('carry the tool, action, outcome and principal of a negotiate call, never its args; a permission_required refusal at info', async () => {
    const logged = await createTestApp({}, { replicaOf: t, captureLogs: true });
    try {
      const id = uniqueId('logs');
      const secret = uniqueId('secret-arg');
      await request(logged.app)
        .post(`/conversations/${id}/negotiate`)
        .send({ action: 'data-tool/create-resource', args: { name: 'n', data: secret } })
        .expect(403);
      await request(logged.app)
        .post(`/conversations/${id}/negotiate`)
        .send({ action: 'example-tool/greet' })
        .expect(200);
      await request(logged.app).post(`/conversations/${id}/negotiate`).send({ action: 'nothing-here' }).expect(404);
      const lines = logged.logs.filter((l) => l.msg === 'request completed' && String(l.url).includes(id));
      expect(lines).toHaveLength(3);
      const [refusal, ok, unrouted] = lines;
      expect(refusal).toMatchObject({
        level: 30,
        status: 403,
        tool: 'data-tool',
        action: 'create-resource',
        outcome: 'permission_required',
        principal: 'admin:admin',
      });
      expect(ok).toMatchObject({ level: 30, status: 200, tool: 'example-tool', action: 'greet', outcome: 'ok' });
      expect(unrouted).toMatchObject({ level: 40, status: 404, action: 'nothing-here', outcome: 'no_tool' });
      const all = JSON.stringify(logged.logs);
      expect(all).not.toContain(secret);
      expect(all).not.toContain(TEST_ADMIN_TOKEN);
    } finally {
      await logged.close();
    }
  });

  it('carry them for an MCP tools/call too', async () => {
    const logged = await createTestApp({}, { replicaOf: t, captureLogs: true });
    const listening = logged.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => listening.once('listening', resolve));
    try {
      const id = uniqueId('logs-mcp');
      const at = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
      const secret = uniqueId('secret-arg');
      expect((await mcpCall(id, 'example-tool_greet', { name: secret }, at)).isError).toBeFalsy();
      const calls = logged.logs.filter((l) => l.msg === 'request completed' && l.tool !== undefined);
      expect(calls).toEqual([
        expect.objectContaining({ tool: 'example-tool', action: 'greet', outcome: 'ok', principal: 'admin:admin' }),
      ]);
      expect(String(calls[0]!.url)).toContain(`/conversations/${id}/mcp`);
      expect(JSON.stringify(logged.logs)).not.toContain(secret);
    } finally {
      listening.closeAllConnections();
      await new Promise((resolve) => listening.close(resolve));
      await closeMcpSessions(logged.services);
      await logged.close();
    }
  });
});
