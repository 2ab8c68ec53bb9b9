/**
 * Participants that fail, through the real app on Postgres (API.md,
 * "Participants", Calls): an upstream that is down, slow past its
 * timeoutMs, answering garbage, or a stdio child that crashes never takes
 * the service down nor delays a bundled tool; an unreachable upstream is 503
 * participant_unavailable with Retry-After, five failures in a row open the
 * circuit (answered at once, nothing sent upstream) until a probe closes it,
 * and `participant_up` in /metrics tells the truth all along.
 */
import { join } from 'node:path';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { type MintedKey, as, createConversation, mintKey } from '../support/identity';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { type HttpUpstream, type RawAnswer, startRawServer } from './support/http-upstreams';
import { FIXTURES } from './support/upstreams';

jest.setTimeout(60_000);

let t: TestApp;
let user: MintedKey;
let upstream: HttpUpstream;
let mode: 'ok' | 'reset' | 'garbage' = 'ok';

const TOOLS = [
  { name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
  { name: 'slow', inputSchema: { type: 'object' } },
];

function answer(m: { id?: unknown; method?: string; params?: Record<string, unknown> }): RawAnswer | undefined {
  if (mode === 'reset') return 'reset';
  if (mode === 'garbage' && m.method === 'tools/call')
    return { status: 200, contentType: 'text/html', body: '<h1>Hi</h1>' };
  const reply = (result: unknown): RawAnswer => ({
    status: 200,
    contentType: 'application/json',
    body: JSON.stringify({ jsonrpc: '2.0', id: m.id, result }),
  });
  if (m.method === 'tools/list') return reply({ tools: TOOLS });
  if (m.method !== 'tools/call') return undefined;
  if (m.params?.name === 'slow') return 'hold';
  const args = m.params?.arguments as { message?: string } | undefined;
  return reply({ content: [{ type: 'text', text: `Echo: ${args?.message ?? ''}` }] });
}

beforeAll(async () => {
  upstream = await startRawServer(answer);
  t = await createTestApp();
  user = await mintKey(t.app, 'user', uniqueId('faults'));
});

afterAll(async () => {
  await t?.close();
  await upstream?.close();
});

const admin = () => request(t.app, TEST_ADMIN_TOKEN);

function participantName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}`.slice(0, 31);
}

/** Registers a participant and a conversation of the user's in which it has level 3 (and the calculator level 1). */
async function setUp(body: Record<string, unknown>): Promise<string> {
  const res = await admin().post('/participants').send(body);
  expect(res.status).toBe(201);
  expect(res.body.status).toBe('ready');
  const c = uniqueId('conv');
  await createConversation(t.app, user.token, c);
  await as(t.app, user.token)
    .put(`/conversations/${c}/permissions/${String(body.name)}`)
    .send({ level: 3 })
    .expect(200);
  await as(t.app, user.token).put(`/conversations/${c}/permissions/calculator`).send({ level: 1 }).expect(200);
  return c;
}

function negotiate(c: string, tool: string, action: string, args: Record<string, unknown> = {}) {
  return as(t.app, user.token).post(`/conversations/${c}/negotiate`).send({ tool, action, args });
}

async function participantUp(name: string): Promise<string | undefined> {
  const res = await as(t.app, undefined).get('/metrics').expect(200);
  return new RegExp(`^participant_up\\{participant="${name}"\\} (\\d)$`, 'm').exec(res.text)?.[1];
}

function callsTo(tool: string): number {
  return upstream.requests.filter((r) => (r.body as { params?: { name?: string } } | undefined)?.params?.name === tool)
    .length;
}

describe('a participant slow past its timeoutMs', () => {
  it('answers tool_error naming it at the timeout, while a bundled tool answers at once', async () => {
    const name = participantName('slow');
    const c = await setUp({ name, transport: 'mcp-http', url: upstream.url, timeoutMs: 1_500 });
    const before = callsTo('slow');
    let remoteDone = false;
    const started = Date.now();
    const remote = negotiate(c, name, 'slow').then((res) => {
      remoteDone = true;
      return res;
    });
    await waitFor('the slow call reached the upstream', () => callsTo('slow') > before, 10_000);
    const bundled = await negotiate(c, 'calculator', 'add', { a: 2, b: 3 });
    expect(bundled.status).toBe(200);
    expect(bundled.body.output).toEqual({ result: 5 });
    expect(remoteDone).toBe(false); // the bundled call did not wait for the remote one
    const res = await remote;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
    expect(JSON.stringify(res.body)).toContain(name);
    // Still there, and fast, for the next call.
    expect((await negotiate(c, name, 'echo', { message: 'after' })).body.success).toBe(true);
  });
});

describe('a participant answering garbage', () => {
  it('is 503 participant_unavailable with Retry-After, and the service keeps answering', async () => {
    const name = participantName('garbage');
    const c = await setUp({ name, transport: 'mcp-http', url: upstream.url });
    mode = 'garbage';
    try {
      const res = await negotiate(c, name, 'echo', { message: 'x' });
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body).toMatchObject({ success: false, code: 'participant_unavailable' });
      expect((await negotiate(c, 'calculator', 'add', { a: 1, b: 1 })).status).toBe(200);
    } finally {
      mode = 'ok';
    }
    expect((await negotiate(c, name, 'echo', { message: 'back' })).body.success).toBe(true);
  });
});

describe('a participant whose upstream is down', () => {
  it('is 503 with Retry-After; five failures open the circuit, a probe closes it; participant_up tells the truth', async () => {
    const name = participantName('down');
    const c = await setUp({ name, transport: 'mcp-http', url: upstream.url });
    expect(await participantUp(name)).toBe('1');
    mode = 'reset';
    try {
      for (let i = 0; i < 5; i++) {
        const res = await negotiate(c, name, 'echo', { message: `try ${i}` });
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('participant_unavailable');
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect(await participantUp(name)).toBe('0');
      // Open: answered at once, nothing sent upstream.
      const sent = upstream.requests.length;
      const open = await negotiate(c, name, 'echo', { message: 'open' });
      expect(open.status).toBe(503);
      expect(open.headers['retry-after']).toMatch(/^\d+$/);
      expect(upstream.requests.length).toBe(sent);
      expect((await negotiate(c, 'calculator', 'add', { a: 1, b: 2 })).status).toBe(200);
    } finally {
      mode = 'ok';
    }
    await waitFor(
      'a probe closed the circuit',
      async () => (await negotiate(c, name, 'echo', { message: 'probe' })).status === 200,
      20_000,
    );
    expect(await participantUp(name)).toBe('1');
  });
});

describe('a stdio participant whose child crashes', () => {
  it('fails the call in flight at once (503), fails fast while it restarts, and comes back', async () => {
    const name = participantName('crashy');
    const c = await setUp({
      name,
      transport: 'mcp-stdio',
      command: process.execPath,
      args: [join(FIXTURES, 'exits.mjs')],
      timeoutMs: 20_000,
    });
    const started = Date.now();
    const crash = await negotiate(c, name, 'exit');
    expect(crash.status).toBe(503);
    expect(crash.body.code).toBe('participant_unavailable');
    expect(Date.now() - started).toBeLessThan(5_000); // not at its 20 s timeout
    expect((await negotiate(c, 'calculator', 'add', { a: 2, b: 2 })).status).toBe(200);
    await waitFor(
      'the child restarted',
      async () => (await negotiate(c, name, 'echo', { message: 'again' })).status === 200,
      20_000,
    );
    expect(await participantUp(name)).toBe('1');
    await admin().delete(`/participants/${name}`).expect(204);
  });
});
