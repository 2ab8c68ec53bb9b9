/**
 * Participants over REST (API.md, "Participants"), through the real app on
 * Postgres, with @modelcontextprotocol/server-everything as the upstream
 * over Streamable HTTP and over stdio: registration, the tool in /tools, a
 * call through negotiate, validation, roles, PATCH of secrets, credentials,
 * deletion, and the audit of each change in the `_system` chain.
 */
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/project-root';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { type MintedKey, as, createConversation, mintAgentKey, mintKey } from '../support/identity';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { type RunningUpstream, startEverythingHttp } from './support/upstreams';

const EVERYTHING = join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
/** A secret that must never come back: searched for in every answer below. */
const MARKER = `secret-${uniqueId('m')}`;

let t: TestApp;
let upstream: RunningUpstream;
let user: MintedKey;

beforeAll(async () => {
  upstream = await startEverythingHttp();
  t = await createTestApp();
  user = await mintKey(t.app, 'user', uniqueId('alice'));
}, 60_000);

afterAll(async () => {
  await t?.close();
  await upstream?.stop();
});

const admin = () => request(t.app, TEST_ADMIN_TOKEN);

function expectNoSecret(body: unknown): void {
  expect(JSON.stringify(body)).not.toContain(MARKER);
}

async function register(body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await admin().post('/participants').send(body);
  expectNoSecret(res.body);
  return { status: res.status, body: res.body as Record<string, unknown> };
}

function httpBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, transport: 'mcp-http', url: upstream.url, headers: { Authorization: `Bearer ${MARKER}` }, ...extra };
}

describe('an mcp-http participant', () => {
  const name = uniqueId('every')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 24);

  beforeAll(async () => {
    const res = await register(httpBody(name, { description: 'server-everything over HTTP' }));
    expect(res.status).toBe(201);
  });

  it('is shown with its actions, secret names only, and its status', async () => {
    const res = await admin().get(`/participants/${name}`).expect(200);
    expectNoSecret(res.body);
    expect(res.body).toMatchObject({
      name,
      transport: 'mcp-http',
      url: upstream.url,
      description: 'server-everything over HTTP',
      secrets: ['headers.Authorization'],
      status: 'ready',
    });
    const echo = (res.body.actions as Array<Record<string, unknown>>).find((a) => a.upstreamName === 'echo');
    expect(echo).toMatchObject({
      name: 'echo',
      status: 'active',
      definitionDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(typeof res.body.protocolVersion).toBe('string');
    const list = await as(t.app, user.token).get('/participants').expect(200);
    expect((list.body.participants as Array<{ name: string }>).map((p) => p.name)).toContain(name);
  });

  it('is a tool in /tools, and negotiate calls its upstream', async () => {
    const tools = await admin().get('/tools').expect(200);
    const tool = (tools.body.tools as Array<{ name: string; capabilities: string[] }>).find((x) => x.name === name);
    expect(tool?.capabilities).toContain('echo');

    const c = uniqueId('conv');
    await createConversation(t.app, user.token, c);
    await as(t.app, user.token).put(`/conversations/${c}/permissions/${name}`).send({ level: 3 }).expect(200);
    const res = await as(t.app, user.token)
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: name, action: 'echo', args: { message: 'hello upstream' } });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(JSON.stringify(res.body.output)).toContain('hello upstream');
    expectNoSecret(res.body);
  });

  it('checks args against the upstream schema before anything is sent: 400 invalid_args naming the field', async () => {
    const c = uniqueId('conv');
    await createConversation(t.app, user.token, c);
    await as(t.app, user.token).put(`/conversations/${c}/permissions/${name}`).send({ level: 3 }).expect(200);
    const res = await as(t.app, user.token)
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: name, action: 'echo', args: { message: 42 } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_args');
    expect(JSON.stringify(res.body)).toContain('message');
  });

  it('PATCH replaces secrets key by key (null removes), and the change is audited without values', async () => {
    const res = await admin()
      .patch(`/participants/${name}`)
      .send({ headers: { 'X-Extra': MARKER }, description: 'changed' })
      .expect(200);
    expectNoSecret(res.body);
    expect(res.body.secrets).toEqual(['headers.Authorization', 'headers.X-Extra']);
    const removed = await admin()
      .patch(`/participants/${name}`)
      .send({ headers: { 'X-Extra': null } })
      .expect(200);
    expect(removed.body.secrets).toEqual(['headers.Authorization']);
    expect(removed.body.description).toBe('changed');
    // A change that touches neither the address nor a secret keeps the connection (no new handshake).
    await waitFor('reconnected', async () => (await admin().get(`/participants/${name}`)).body.status === 'ready');
    const kept = await admin().patch(`/participants/${name}`).send({ description: 'changed again' }).expect(200);
    expect(kept.body.status).toBe('ready');

    const audit = await admin().get('/conversations/_system/audit?limit=500').expect(200);
    expectNoSecret(audit.body);
    const events = (audit.body.entries as Array<{ event: string; tool?: string }>).filter((e) => e.tool === name);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining(['participant.registered', 'participant.changed']),
    );
  });

  it('keeps per-owner credentials for users and admins, never for agents', async () => {
    await as(t.app, user.token)
      .put(`/participants/${name}/credentials/me`)
      .send({ headers: { Authorization: `Bearer ${MARKER}-own` } })
      .expect(204);
    const c = uniqueId('conv');
    await createConversation(t.app, user.token, c);
    await as(t.app, user.token).put(`/conversations/${c}/permissions/${name}`).send({ level: 3 }).expect(200);
    const call = await as(t.app, user.token)
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: name, action: 'echo', args: { message: 'with my own credentials' } });
    expect(call.body.success).toBe(true);

    const agent = await mintAgentKey(t.app, user.token, c);
    const refused = await as(t.app, agent.token)
      .put(`/participants/${name}/credentials/me`)
      .send({ headers: { Authorization: 'x' } });
    expect(refused.status).toBe(403);
    expect((await as(t.app, agent.token).get('/participants')).status).toBe(403);
    await as(t.app, user.token).delete(`/participants/${name}/credentials/me`).expect(204);
  });

  it('is refused to users for every admin operation', async () => {
    const u = as(t.app, user.token);
    expect((await u.post('/participants').send(httpBody('other-name'))).status).toBe(403);
    expect((await u.patch(`/participants/${name}`).send({ description: 'x' })).status).toBe(403);
    expect((await u.delete(`/participants/${name}`)).status).toBe(403);
    expect((await u.post(`/participants/${name}/refresh`)).status).toBe(403);
    expect((await u.get(`/participants/${name}/actions/echo`)).status).toBe(403);
  });
});

describe('a participant with include and exclude', () => {
  it('shows only the actions it serves, as /tools does', async () => {
    const name = `picked-${Date.now().toString(36)}`;
    const res = await register(httpBody(name, { include: ['echo', 'get-sum'], exclude: ['get-sum'] }));
    expect(res.status).toBe(201);
    const served = ['echo'];
    const names = (body: Record<string, unknown>) =>
      (body.actions as Array<{ name: string }>).map((a) => a.name).sort();
    expect(names(res.body)).toEqual(served);
    expect(names((await admin().get(`/participants/${name}`).expect(200)).body)).toEqual(served);
    const listed = (await admin().get('/participants').expect(200)).body.participants as Array<Record<string, unknown>>;
    expect(names(listed.find((p) => p.name === name)!)).toEqual(served);
    const tool = await admin().get(`/tools/${name}`).expect(200);
    expect((tool.body.actions as Array<{ name: string }>).map((a) => a.name).sort()).toEqual(served);
    // An upstream tool left out is no action of the participant's.
    expect((await admin().get(`/participants/${name}/actions/get-sum`)).status).toBe(404);
    expect((await admin().get(`/participants/${name}/actions/echo`)).status).toBe(200);
    await admin().delete(`/participants/${name}`).expect(204);
  });
});

describe('registration refusals', () => {
  it('409 for a name any tool or participant has', async () => {
    expect((await register(httpBody('data-tool'))).status).toBe(409);
    const name = `dup-${Date.now().toString(36)}`;
    expect((await register(httpBody(name))).status).toBe(201);
    const again = await register(httpBody(name));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
  });

  it('400 validation_failed with errors for a bad body', async () => {
    const res = await register({ name: 'Bad_Name', transport: 'mcp-http' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    const paths = (res.body.errors as Array<{ path: string }>).map((e) => e.path);
    expect(paths).toContain('name');

    const missing = await register({ name: 'no-url', transport: 'mcp-http' });
    expect(missing.status).toBe(400);
    expect((missing.body.errors as Array<{ path: string }>).map((e) => e.path)).toContain('url');

    const scheme = await register({ name: 'bad-scheme', transport: 'mcp-http', url: 'file:///etc/passwd' });
    expect(scheme.status).toBe(400);

    // Cloud metadata and link-local addresses are refused (PARTICIPANT_ALLOWED_HOSTS lists none here).
    const metadata = await register({ name: 'metadata', transport: 'mcp-http', url: 'http://169.254.169.254/mcp' });
    expect(metadata.status).toBe(400);
    expect(metadata.body.errors).toEqual([expect.objectContaining({ path: 'url' })]);

    const stdioWithUrl = await register({ name: 'mixed', transport: 'mcp-stdio', command: 'node', url: upstream.url });
    expect(stdioWithUrl.status).toBe(400);
  });
});

describe('an mcp-stdio participant', () => {
  it('runs server-everything as a child and serves its tools; DELETE removes the tool', async () => {
    const name = `stdio-${Date.now().toString(36)}`;
    const res = await register({
      name,
      transport: 'mcp-stdio',
      command: process.execPath,
      args: [EVERYTHING, 'stdio'],
      env: { SOME_TOKEN: MARKER },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'ready', secrets: ['env.SOME_TOKEN'], command: process.execPath });

    const c = uniqueId('conv');
    await createConversation(t.app, user.token, c);
    await as(t.app, user.token).put(`/conversations/${c}/permissions/${name}`).send({ level: 3 }).expect(200);
    const call = await as(t.app, user.token)
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: name, action: 'echo', args: { message: 'over stdio' } });
    expect(call.body.success).toBe(true);
    expect(JSON.stringify(call.body.output)).toContain('over stdio');

    await admin().delete(`/participants/${name}`).expect(204);
    expect((await admin().get(`/participants/${name}`)).status).toBe(404);
    const tools = await admin().get('/tools').expect(200);
    expect((tools.body.tools as Array<{ name: string }>).map((x) => x.name)).not.toContain(name);
  }, 60_000);
});
