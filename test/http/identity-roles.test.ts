/**
 * Who may do what (API.md, Identity and access), over real HTTP on the real
 * app: the role table as a table (one row per role and endpoint), then
 * conversations across owners: another user's conversation does not exist
 * for a user (the same 404 as an id nobody used), GET /conversations lists
 * only one's own, negotiate on an unknown id creates it for the caller,
 * admins see everything, and a conversation without owner (M4 data) is for
 * admins only.
 */
import type { Server } from 'node:http';
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  INITIALIZE,
  MCP_ACCEPT,
  type MintedKey,
  as,
  createConversation,
  expectProblem,
  expectUnauthorized,
  listen,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

let t: TestApp;
let server: Server | undefined;
/** The app listening on a port: one server for every request (supertest would start one per request). */
let app: string;
let owner: MintedKey;
let other: MintedKey;
/** An agent of another conversation of the same owner: its subject is the owner's, its conversation is not. */
let foreignAgent: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base: app } = await listen(t.app));
  owner = await mintKey(app, 'user', 'alice');
  other = await mintKey(app, 'user', 'bob');
  const elsewhere = uniqueId('roles-elsewhere');
  await createConversation(app, owner.token, elsewhere);
  foreignAgent = await mintAgentKey(app, owner.token, elsewhere);
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
});

// ---- the table -------------------------------------------------------------------

type Role = 'admin' | 'owner' | 'other user' | 'agent' | 'foreign agent' | 'anonymous';
const ROLES: Role[] = ['admin', 'owner', 'other user', 'agent', 'foreign agent', 'anonymous'];

/** A fresh conversation per row: owned by alice, data-tool at level 2, resource `doc`, one agent key. */
interface Cell {
  conversationId: string;
  agent: MintedKey;
}

async function freshCell(): Promise<Cell> {
  const conversationId = uniqueId('roles');
  await createConversation(app, owner.token, conversationId);
  await request(app, owner.token)
    .put(`/conversations/${conversationId}/permissions/data-tool`)
    .send({ level: 2 })
    .expect(200);
  await request(app, owner.token)
    .put(`/conversations/${conversationId}/resources/doc`)
    .send({ data: { v: 1 } })
    .expect(201);
  return { conversationId, agent: await mintAgentKey(app, owner.token, conversationId) };
}

function tokenOf(role: Role, cell: Cell): string | undefined {
  switch (role) {
    case 'admin':
      return TEST_ADMIN_TOKEN;
    case 'owner':
      return owner.token;
    case 'other user':
      return other.token;
    case 'agent':
      return cell.agent.token;
    case 'foreign agent':
      return foreignAgent.token;
    case 'anonymous':
      return undefined;
  }
}

type Call = (a: supertest.Agent, cell: Cell) => supertest.Test;

const conv = (cell: Cell, rest = ''): string => `/conversations/${cell.conversationId}${rest}`;

/** Expected outcome: a success status, or 401/403/404. */
type Outcome = number;
const A = 'allowed';
type Expectation = Record<Role, Outcome | typeof A>;
/** An endpoint whose success changes the conversation gets a fresh one per row; the others share one. */
const MUTATES = 'mutates';
type Mutates = typeof MUTATES;

/**
 * Each endpoint family → what each role gets. From the contract's role table:
 * admin everything; the owner everything on its conversation; another user
 * 404 there; the conversation's agent negotiate, MCP, reading resources,
 * /tools… and /me, 403 for the rest of its conversation; an agent of another
 * conversation 404 there; agents never create conversations or manage keys;
 * users mint no admin/user keys; no token 401.
 */
const ENDPOINTS: [string, Call, number, Expectation, Mutates?][] = [
  [
    'POST /conversations',
    (a) => a.post('/conversations').send({}),
    201,
    { admin: A, owner: A, 'other user': A, agent: 403, 'foreign agent': 403, anonymous: 401 },
  ],
  [
    'GET /conversations',
    (a) => a.get('/conversations'),
    200,
    { admin: A, owner: A, 'other user': A, agent: 403, 'foreign agent': 403, anonymous: 401 },
  ],
  [
    'GET /conversations/{id}',
    (a, c) => a.get(conv(c)),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'DELETE /conversations/{id}',
    (a, c) => a.delete(conv(c)),
    204,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
    MUTATES,
  ],
  [
    'GET /conversations/{id}/state',
    (a, c) => a.get(conv(c, '/state')),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'POST negotiate (read action)',
    (a, c) => a.post(conv(c, '/negotiate')).send({ action: 'data-tool/read-resource', args: { name: 'doc' } }),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'POST negotiate (write action)',
    (a, c) =>
      a.post(conv(c, '/negotiate')).send({ action: 'data-tool/update-resource', args: { name: 'doc', data: 2 } }),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
    MUTATES,
  ],
  [
    'GET resources',
    (a, c) => a.get(conv(c, '/resources')),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'GET resources/{name}',
    (a, c) => a.get(conv(c, '/resources/doc')),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'PUT resources/{name}',
    (a, c) => a.put(conv(c, '/resources/doc')).send({ data: { v: 2 } }),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
    MUTATES,
  ],
  [
    'DELETE resources/{name}',
    (a, c) => a.delete(conv(c, '/resources/doc')),
    204,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
    MUTATES,
  ],
  [
    'GET permissions',
    (a, c) => a.get(conv(c, '/permissions')),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'PUT permissions/{tool}',
    (a, c) => a.put(conv(c, '/permissions/data-tool')).send({ level: 3 }),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
    MUTATES,
  ],
  [
    'GET permissions/history',
    (a, c) => a.get(conv(c, '/permissions/history')),
    200,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'POST agent-keys',
    (a, c) => a.post(conv(c, '/agent-keys')).send({ label: 'x' }),
    201,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'POST /keys',
    (a) => a.post('/keys').send({ role: 'user', subject: 'carol' }),
    201,
    { admin: A, owner: 403, 'other user': 403, agent: 403, 'foreign agent': 403, anonymous: 401 },
  ],
  [
    'GET /keys',
    (a) => a.get('/keys'),
    200,
    { admin: A, owner: A, 'other user': A, agent: 403, 'foreign agent': 403, anonymous: 401 },
  ],
  [
    "DELETE /keys/{id} (the conversation's agent key)",
    (a, c) => a.delete(`/keys/${c.agent.id}`),
    204,
    { admin: A, owner: A, 'other user': 404, agent: 403, 'foreign agent': 403, anonymous: 401 },
    MUTATES,
  ],
  [
    'GET /me',
    (a) => a.get('/me'),
    200,
    { admin: A, owner: A, 'other user': A, agent: A, 'foreign agent': A, anonymous: 401 },
  ],
  [
    'GET /tools',
    (a) => a.get('/tools'),
    200,
    { admin: A, owner: A, 'other user': A, agent: A, 'foreign agent': A, anonymous: 401 },
  ],
  [
    'GET /tools/definitions?conversationId=',
    (a, c) => a.get(`/tools/definitions?conversationId=${c.conversationId}`),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'GET /tools/prompt?conversationId=',
    (a, c) => a.get(`/tools/prompt?conversationId=${c.conversationId}`),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
  [
    'POST /conversations/{id}/mcp (initialize)',
    (a, c) => a.post(conv(c, '/mcp')).set('Accept', MCP_ACCEPT).send(INITIALIZE),
    200,
    { admin: A, owner: A, 'other user': 404, agent: A, 'foreign agent': 404, anonymous: 401 },
  ],
];

const CODES: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found' };

const ROWS = ENDPOINTS.flatMap(([endpoint, call, success, expected, mutates]) =>
  ROLES.map((role) => {
    const outcome = expected[role];
    return [endpoint, role, outcome === A ? success : outcome, call, mutates === MUTATES] as const;
  }),
);

let shared: Promise<Cell> | undefined;

describe('the role table', () => {
  it.each(ROWS)('%s as %s → %d', async (_endpoint, role, status, call, mutates) => {
    const cell = await (mutates ? freshCell() : (shared ??= freshCell()));
    const res = await call(as(app, tokenOf(role, cell)), cell);
    expect({ status: res.status, body: status < 300 ? undefined : res.body }).toEqual({
      status,
      body: status < 300 ? undefined : expect.objectContaining({ code: CODES[status] }),
    });
    if (status === 401) expectUnauthorized(res);
    else if (status >= 400) expectProblem(res, status, CODES[status]!);
    // A refusal changed nothing: the conversation, its resource, its level and its agent key are as they were.
    if (status >= 400) {
      const c = await request(app).get(conv(cell, '/resources/doc'));
      expect({ status: c.status, data: c.body.data, version: c.body.version }).toEqual({
        status: 200,
        data: { v: 1 },
        version: 1,
      });
      const levels = await request(app).get(conv(cell, '/permissions')).expect(200);
      expect(levels.body.tools).toContainEqual(expect.objectContaining({ tool: 'data-tool', level: 2 }));
      await request(app, cell.agent.token).get('/me').expect(200);
    }
  });
});

// ---- across owners ---------------------------------------------------------------

/** What a problem says, with the conversation id taken out: the same for a hidden conversation and a missing one. */
function shape(res: supertest.Response, id: string): unknown {
  return {
    status: res.status,
    contentType: res.headers['content-type'],
    body: { ...(JSON.parse(JSON.stringify(res.body).split(id).join('ID')) as object), requestId: undefined },
  };
}

describe('across owners', () => {
  let aliceConv: string;
  beforeAll(async () => {
    aliceConv = uniqueId('alice');
    await createConversation(app, owner.token, aliceConv);
    await request(app, owner.token)
      .put(`/conversations/${aliceConv}/resources/secret`)
      .send({ data: 'alice only' })
      .expect(201);
  });

  // Endpoints that never create: another user's conversation answers exactly as one nobody ever used.
  const HIDDEN: [string, (a: supertest.Agent, id: string) => supertest.Test][] = [
    ['GET conversation', (a, id) => a.get(`/conversations/${id}`)],
    ['DELETE conversation', (a, id) => a.delete(`/conversations/${id}`)],
    ['GET state', (a, id) => a.get(`/conversations/${id}/state`)],
    ['GET resources', (a, id) => a.get(`/conversations/${id}/resources`)],
    ['GET resource', (a, id) => a.get(`/conversations/${id}/resources/secret`)],
    ['DELETE resource', (a, id) => a.delete(`/conversations/${id}/resources/secret`)],
    ['GET permissions', (a, id) => a.get(`/conversations/${id}/permissions`)],
    ['GET history', (a, id) => a.get(`/conversations/${id}/permissions/history`)],
    ['POST agent-keys', (a, id) => a.post(`/conversations/${id}/agent-keys`).send({})],
    ['GET definitions', (a, id) => a.get(`/tools/definitions?conversationId=${id}`)],
    ['GET prompt', (a, id) => a.get(`/tools/prompt?conversationId=${id}`)],
  ];

  it.each(HIDDEN)("%s of another user's conversation: the same 404 as for an id nobody used", async (_what, call) => {
    const missing = uniqueId('alice');
    const hidden = await call(request(app, other.token), aliceConv);
    const absent = await call(request(app, other.token), missing);
    expectProblem(hidden, 404, 'not_found');
    expect(shape(hidden, aliceConv)).toEqual(shape(absent, missing));
    // And the owner still sees it whole.
    const mine = await request(app, owner.token).get(`/conversations/${aliceConv}/resources/secret`);
    expect({ status: mine.status, data: mine.body.data }).toEqual({ status: 200, data: 'alice only' });
  });

  it.each([
    ['negotiate (read)', { action: 'data-tool/read-resource', args: { name: 'secret' } }],
    ['negotiate (write)', { action: 'data-tool/update-resource', args: { name: 'secret', data: 'bob was here' } }],
    ['negotiate (list)', { action: 'data-tool/list-resources', args: {} }],
    ['negotiate (upgrade)', { action: 'upgrade:data-tool:level-3' }],
    ['negotiate (list-tools)', { action: 'list-tools' }],
    ['negotiate (dry run)', { action: 'data-tool/read-resource', args: { name: 'secret' }, dryRun: true }],
  ])("%s in another user's conversation → 404 not_found, nothing revealed or changed", async (_what, body) => {
    const res = await request(app, other.token).post(`/conversations/${aliceConv}/negotiate`).send(body);
    expectProblem(res, 404, 'not_found');
    expect(JSON.stringify(res.body)).not.toContain('alice only');
    expect(res.body.detail).toBe(`Conversation not found: ${aliceConv}`);
    const mine = await request(app, owner.token).get(`/conversations/${aliceConv}/resources/secret`).expect(200);
    expect(mine.body).toEqual(expect.objectContaining({ data: 'alice only', version: 1 }));
    const levels = await request(app, owner.token).get(`/conversations/${aliceConv}/permissions`).expect(200);
    expect(levels.body.tools).toContainEqual(expect.objectContaining({ tool: 'data-tool', level: 1 }));
  });

  it("PUT of a resource or a level in another user's conversation → 404, nothing written", async () => {
    const put = await request(app, other.token)
      .put(`/conversations/${aliceConv}/resources/secret`)
      .send({ data: 'bob was here' });
    expectProblem(put, 404, 'not_found');
    const created = await request(app, other.token)
      .put(`/conversations/${aliceConv}/resources/new-one`)
      .send({ data: 1 });
    expectProblem(created, 404, 'not_found');
    const level = await request(app, other.token)
      .put(`/conversations/${aliceConv}/permissions/data-tool`)
      .send({ level: 3 });
    expectProblem(level, 404, 'not_found');
    const res = await request(app, owner.token).get(`/conversations/${aliceConv}/resources`).expect(200);
    expect(res.body.resources.map((r: { name: string; data: unknown }) => [r.name, r.data])).toEqual([
      ['secret', 'alice only'],
    ]);
    const history = await request(app, owner.token).get(`/conversations/${aliceConv}/permissions/history`).expect(200);
    expect(history.body.events).toEqual([]);
  });

  it("a POST /conversations with another user's id is 409 (the id is taken), and does not hand it over", async () => {
    const res = await request(app, other.token).post('/conversations').send({ id: aliceConv });
    expectProblem(res, 409, 'conflict');
    expectProblem(await request(app, other.token).get(`/conversations/${aliceConv}`), 404, 'not_found');
    const mine = await request(app, owner.token).get(`/conversations/${aliceConv}`).expect(200);
    expect(mine.body.owner).toBe('alice');
  });

  it('GET /conversations lists only the caller’s own; an admin’s lists all', async () => {
    const bobConv = uniqueId('bob');
    await createConversation(app, other.token, bobConv);
    const ids = async (token: string): Promise<string[]> => {
      const res = await request(app, token).get('/conversations?limit=500').expect(200);
      return (res.body.conversations as { id: string; owner: string }[]).map((c) => c.id);
    };
    const owners = async (token: string): Promise<Set<string | null>> => {
      const res = await request(app, token).get('/conversations?limit=500').expect(200);
      return new Set((res.body.conversations as { owner: string | null }[]).map((c) => c.owner));
    };
    const bobs = await ids(other.token);
    expect(bobs).toContain(bobConv);
    expect(bobs).not.toContain(aliceConv);
    expect(await owners(other.token)).toEqual(new Set(['bob']));
    const alices = await ids(owner.token);
    expect(alices).toContain(aliceConv);
    expect(alices).not.toContain(bobConv);
    expect(await owners(owner.token)).toEqual(new Set(['alice']));
    const all = await ids(TEST_ADMIN_TOKEN);
    expect(all).toEqual(expect.arrayContaining([aliceConv, bobConv]));
  });

  it('negotiate on an unknown id creates the conversation, owned by the caller', async () => {
    const id = uniqueId('bob-new');
    const res = await request(app, other.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'example-tool/greet', args: { name: 'bob' } });
    expect(res.status).toBe(200);
    const c = await request(app, other.token).get(`/conversations/${id}`).expect(200);
    expect(c.body.owner).toBe('bob');
    expectProblem(await request(app, owner.token).get(`/conversations/${id}`), 404, 'not_found');
    expect((await request(app).get(`/conversations/${id}`).expect(200)).body.owner).toBe('bob');
  });

  it('an agent never creates a conversation by negotiating on an unknown id', async () => {
    const id = uniqueId('agent-new');
    const res = await request(app, foreignAgent.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'example-tool/greet', args: {} });
    expectProblem(res, 404, 'not_found');
    expectProblem(await request(app).get(`/conversations/${id}`), 404, 'not_found');
  });

  it('an agent key of a deleted conversation never acts in one created again with its id by another user', async () => {
    // A replica that has not heard of the key's revocation yet (the contract allows it 5 s): here, never.
    const replica = await createTestApp({}, { replicaOf: t, auth: { pollIntervalMs: 600_000, staleAfterMs: 600_000 } });
    try {
      const id = uniqueId('reused');
      await createConversation(app, owner.token, id);
      const agent = await mintAgentKey(app, owner.token, id);
      await request(replica.app, agent.token).get(`/conversations/${id}/resources`).expect(200);
      await request(app, owner.token).delete(`/conversations/${id}`).expect(204);
      // Bob takes the id: his conversation is not the one the key was minted for.
      await createConversation(app, other.token, id);
      await request(app, other.token).put(`/conversations/${id}/resources/bobs`).send({ data: 'bob only' }).expect(201);
      expectProblem(
        await request(replica.app, agent.token).get(`/conversations/${id}/resources/bobs`),
        404,
        'not_found',
      );
      expectProblem(await request(replica.app, agent.token).get(`/conversations/${id}/resources`), 404, 'not_found');
      expectProblem(
        await request(replica.app, agent.token)
          .post(`/conversations/${id}/negotiate`)
          .send({ action: 'data-tool/read-resource', args: { name: 'bobs' } }),
        404,
        'not_found',
      );
      expectProblem(
        await request(replica.app, agent.token)
          .post(`/conversations/${id}/negotiate`)
          .send({ action: 'data-tool/list-resources', args: {} }),
        404,
        'not_found',
      );
      expectProblem(
        await request(replica.app, agent.token).get(`/tools/definitions?conversationId=${id}`),
        404,
        'not_found',
      );
      const mcp = await request(replica.app, agent.token)
        .post(`/conversations/${id}/mcp`)
        .set('Accept', MCP_ACCEPT)
        .send(INITIALIZE);
      expectProblem(mcp, 404, 'not_found');
    } finally {
      await closeMcpSessions(replica.services);
      await replica.close();
    }
  });

  it("an admin reads, writes and deletes any user's conversation", async () => {
    const id = uniqueId('bob-admin');
    await createConversation(app, other.token, id);
    const admin = (): supertest.Agent => request(app, TEST_ADMIN_TOKEN);
    expect((await admin().get(`/conversations/${id}`).expect(200)).body.owner).toBe('bob');
    await admin().put(`/conversations/${id}/resources/r`).send({ data: 1 }).expect(201);
    await admin().put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }).expect(200);
    const run = await admin()
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'data-tool/update-resource', args: { name: 'r', data: 2 } });
    expect(run.status).toBe(200);
    await admin().delete(`/conversations/${id}`).expect(204);
    expectProblem(await request(app, other.token).get(`/conversations/${id}`), 404, 'not_found');
  });

  it('a conversation without owner (from M4) is reachable by admins only', async () => {
    const id = uniqueId('m4');
    await t.db.pool.query('INSERT INTO conversations (id, legacy_level) VALUES ($1, 2)', [id]);
    const got = await request(app).get(`/conversations/${id}`).expect(200);
    expect(got.body).toEqual(expect.objectContaining({ id, owner: null, legacyLevel: 2 }));
    await request(app).get(`/conversations/${id}/permissions`).expect(200);
    for (const token of [owner.token, other.token]) {
      expectProblem(await request(app, token).get(`/conversations/${id}`), 404, 'not_found');
      expectProblem(await request(app, token).get(`/conversations/${id}/state`), 404, 'not_found');
      expectProblem(
        await request(app, token)
          .post(`/conversations/${id}/negotiate`)
          .send({ action: 'data-tool/list-resources', args: {} }),
        404,
        'not_found',
      );
      expectProblem(
        await request(app, token).put(`/conversations/${id}/resources/x`).send({ data: 1 }),
        404,
        'not_found',
      );
      expectProblem(
        await request(app, token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 3 }),
        404,
        'not_found',
      );
      expectProblem(await request(app, token).post(`/conversations/${id}/agent-keys`).send({}), 404, 'not_found');
      const list = await request(app, token).get('/conversations?limit=500').expect(200);
      expect(list.body.conversations.map((c: { id: string }) => c.id)).not.toContain(id);
    }
    // Still ownerless: no user's request claimed it.
    expect((await request(app).get(`/conversations/${id}`).expect(200)).body.owner).toBeNull();
    // An admin acts in it, and may give it an agent.
    const agent = await mintAgentKey(app, TEST_ADMIN_TOKEN, id);
    const run = await request(app, agent.token)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'data-tool/list-resources', args: {} });
    expect(run.status).toBe(200);
    await request(app).delete(`/conversations/${id}`).expect(204);
  });
});
