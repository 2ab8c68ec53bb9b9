/**
 * An mcp-http upstream that restarts forgets its sessions: server-everything
 * (SDK 1.x) then answers a request with the old session id HTTP 400 "No valid
 * session ID provided", not the spec's 404. The connector must take that for
 * a lost session (initialise again, retry once), and a connection failure
 * must drop the session, so that calls succeed again once the upstream is
 * back on the same port: for the connector alone, and for a participant
 * registered in the real app (status back to ready, negotiate succeeds).
 */
import { createMcpHttpConnector } from '../../src/participants/mcp-upstream';
import { type UpstreamConnector, UpstreamUnavailableError } from '../../src/participants/upstream';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { as, createConversation, mintKey } from '../support/identity';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { memoryLogger, type RunningUpstream, startEverythingHttp } from './support/upstreams';

jest.setTimeout(90_000);

const portOf = (u: RunningUpstream): number => Number(new URL(u.url).port);
const callOptions = () => ({ signal: new AbortController().signal, timeoutMs: 10_000 });

describe('mcp-http connector, server-everything restarted on the same port', () => {
  let upstream: RunningUpstream | undefined;
  let connector: UpstreamConnector | undefined;
  const logger = memoryLogger();
  const forgotten = (): number => logger.lines.filter((l) => l.msg?.includes('forgot its session')).length;
  afterAll(async () => {
    await connector?.close();
    await upstream?.stop();
  });

  it('initialises again when the restarted upstream answers 400 for the forgotten session', async () => {
    upstream = await startEverythingHttp();
    const port = portOf(upstream);
    connector = createMcpHttpConnector({ participant: 'everything', url: upstream.url, logger });
    await connector.start();
    expect((await connector.call('echo', { message: 'one' }, callOptions())).isError).toBe(false);

    await upstream.stop();
    upstream = await startEverythingHttp(port);
    // No call in between: the session the connector holds is one the new process never issued.
    const after = await connector.call('echo', { message: 'two' }, callOptions());
    expect(after).toEqual({ output: { content: [{ type: 'text', text: 'Echo: two' }] }, isError: false });
    expect(forgotten()).toBe(1);
  });

  it('drops the session after a failed call, so the call after the restart initialises', async () => {
    const port = portOf(upstream!);
    await upstream!.stop();
    const down = await connector!.call('echo', { message: 'down' }, callOptions()).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(UpstreamUnavailableError);
    upstream = await startEverythingHttp(port);
    expect((await connector!.call('echo', { message: 'three' }, callOptions())).output).toEqual({
      content: [{ type: 'text', text: 'Echo: three' }],
    });
    // A new session from the start: the old one was never sent to the new process.
    expect(forgotten()).toBe(1);
  });

  it('lists the tools again after a restart (what POST /participants/{name}/refresh does)', async () => {
    const port = portOf(upstream!);
    await upstream!.stop();
    upstream = await startEverythingHttp(port);
    const tools = await connector!.listTools();
    expect(tools.map((t) => t.upstreamName)).toContain('echo');
    expect(forgotten()).toBe(2);
  });
});

describe('a registered server-everything participant whose upstream restarts', () => {
  let t: TestApp | undefined;
  let upstream: RunningUpstream | undefined;
  afterAll(async () => {
    await t?.close();
    await upstream?.stop();
  });

  it('comes back: status ready again and calls succeed', async () => {
    upstream = await startEverythingHttp();
    const port = portOf(upstream);
    t = await createTestApp();
    const app = t.app;
    const user = await mintKey(app, 'user', uniqueId('restart'));
    const name = `ev-restart-${Date.now().toString(36)}`.slice(0, 31);
    const admin = () => request(app, TEST_ADMIN_TOKEN);
    const created = await admin().post('/participants').send({ name, transport: 'mcp-http', url: upstream.url });
    expect(created.status).toBe(201);
    const c = uniqueId('conv');
    await createConversation(app, user.token, c);
    await as(app, user.token).put(`/conversations/${c}/permissions/${name}`).send({ level: 3 }).expect(200);
    const echo = (message: string) =>
      as(app, user.token).post(`/conversations/${c}/negotiate`).send({ tool: name, action: 'echo', args: { message } });
    expect((await echo('before')).body).toMatchObject({ success: true });

    await upstream.stop();
    // Down: 503 until the circuit opens (five failures in a row), then answered at once.
    for (let i = 0; i < 5; i++) expect((await echo(`down ${i}`)).status).toBe(503);
    expect((await admin().get(`/participants/${name}`)).body.status).not.toBe('ready');

    upstream = await startEverythingHttp(port);
    await waitFor('a probe closed the circuit', async () => (await echo('probe')).status === 200, 30_000);
    const back = await echo('back');
    expect(back.body).toMatchObject({ success: true });
    expect(JSON.stringify(back.body.output)).toContain('Echo: back');
    expect((await admin().get(`/participants/${name}`)).body.status).toBe('ready');
    await admin().delete(`/participants/${name}`).expect(204);
  });
});
