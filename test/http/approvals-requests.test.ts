/**
 * Which approval requests exist and when they end (API.md, Approvals), over
 * real HTTP on a real Postgres, for each kind of principal (the admin, the
 * owner, an agent key): each principal's refused call is its own request,
 * readable by the one who asked; a request is settled (`satisfied`) when a
 * level change makes it unnecessary, or when the same principal's identical
 * call runs; a call whose args could never run records none. The
 * approvals_pending gauge follows: it counts only what someone waits on.
 */
import { rmSync } from 'node:fs';
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, createConversation, mintAgentKey, mintKey } from '../support/identity';
import { SANDBOXED_TOOL, toolsDirWith } from '../support/isolation-tools';
import { waitFor } from '../support/poll';
import { serverUrl } from '../support/db-server';
import { sqlStatements } from '../support/sql-statements';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let isolated: TestApp;
let toolsDir: string;
let alice: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  toolsDir = toolsDirWith({ 'sandboxed-tool.js': SANDBOXED_TOOL });
  // The same database, with a TOOLS_DIR tool whose args are checked in its worker.
  isolated = await createTestApp({ TOOLS_DIR: toolsDir }, { replicaOf: t });
  alice = await mintKey(t.app, 'user', uniqueId('alice'));
});

afterAll(async () => {
  await isolated?.close();
  await t?.close();
  if (toolsDir) rmSync(toolsDir, { recursive: true, force: true });
});

type Body = Record<string, unknown>;
type Who = 'admin' | 'owner' | 'agent';
const PRINCIPALS: Who[] = ['admin', 'owner', 'agent'];

interface Approval {
  id: string;
  requestedBy: string;
  status: string;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  scope: string | null;
}

/** A conversation of alice's with an agent key; each principal's token and `requestedBy`. */
async function setup(): Promise<{ id: string; token: Record<Who, string>; actor: Record<Who, string> }> {
  const id = uniqueId('req');
  await createConversation(t.app, alice.token, id);
  const agent = await mintAgentKey(t.app, alice.token, id);
  return {
    id,
    token: { admin: TEST_ADMIN_TOKEN, owner: alice.token, agent: agent.token },
    actor: { admin: 'admin:admin', owner: `user:${alice.subject}`, agent: `agent:${agent.id}` },
  };
}

function negotiate(token: string, id: string, body: Body, app: TestApp = t): supertest.Test {
  return request(app.app, token).post(`/conversations/${id}/negotiate`).send(body);
}

async function refuse(token: string, id: string, body: Body): Promise<string> {
  const res = await negotiate(token, id, body);
  expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'permission_required' });
  return (res.body.approval as { id: string }).id;
}

async function approvals(id: string, status?: string): Promise<Approval[]> {
  const res = await request(t.app, alice.token)
    .get(`/conversations/${id}/approvals${status ? `?status=${status}` : ''}`)
    .expect(200);
  return res.body.approvals as Approval[];
}

async function approval(id: string, approvalId: string): Promise<Approval> {
  return (await request(t.app, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200))
    .body as Approval;
}

async function setLevel(id: string, tool: string, level: number): Promise<void> {
  await request(t.app, alice.token).put(`/conversations/${id}/permissions/${tool}`).send({ level }).expect(200);
}

/** The pending requests of the whole database, as the gauge should count them. */
async function pendingInDatabase(): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM approvals WHERE status = 'pending' AND expires_at > now()",
  );
  return rows[0]!.n;
}

async function gauge(): Promise<number> {
  const res = await anonymous(t.app).get('/metrics').expect(200);
  const line = /^approvals_pending (\S+)$/m.exec(res.text);
  if (!line) throw new Error('no approvals_pending sample');
  return Number(line[1]);
}

/** The gauge is read from the database at most once a second: a later scrape shows `n`. */
async function expectGauge(n: number): Promise<void> {
  expect(await pendingInDatabase()).toBe(n);
  await waitFor(`approvals_pending to read ${n}`, async () => (await gauge()) === n);
}

const CREATE = (name: string): Body => ({ action: 'data-tool/create-resource', args: { name, data: { n: 1 } } });

describe('an identical call refused for several principals', () => {
  it('records one request per principal, each readable by the one who asked and listed for the owner', async () => {
    const { id, token, actor } = await setup();
    const before = await pendingInDatabase();
    const ids = {} as Record<Who, string>;
    for (const who of PRINCIPALS) ids[who] = await refuse(token[who], id, CREATE('same'));
    expect(new Set(Object.values(ids)).size).toBe(3);
    // The same principal's identical call again reuses its own.
    for (const who of PRINCIPALS) expect(await refuse(token[who], id, CREATE('same'))).toBe(ids[who]);

    const listed = await approvals(id, 'pending');
    expect(listed.map((a) => [a.id, a.requestedBy]).sort()).toEqual(
      PRINCIPALS.map((who) => [ids[who], actor[who]]).sort(),
    );
    // The agent reads the request it was given; another principal's stays closed to it.
    const own = await request(t.app, token.agent).get(`/conversations/${id}/approvals/${ids.agent}`).expect(200);
    expect(own.body).toMatchObject({ id: ids.agent, requestedBy: actor.agent, status: 'pending' });
    await request(t.app, token.agent).get(`/conversations/${id}/approvals/${ids.admin}`).expect(403);
    await expectGauge(before + 3);

    // Approving the admin's request once leaves the agent's waiting: its own retry is still refused.
    await request(t.app, alice.token)
      .post(`/conversations/${id}/approvals/${ids.admin}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    const retry = await negotiate(token.agent, id, { ...CREATE('same'), approvalId: ids.agent });
    expect([retry.status, retry.body.code, retry.body.approval?.id]).toEqual([403, 'permission_required', ids.agent]);
    // Nor can the agent run the call under the admin's approval: it covers the admin's call only.
    const borrowed = await negotiate(token.agent, id, { ...CREATE('same'), approvalId: ids.admin });
    expect([borrowed.status, borrowed.body.code]).toEqual([409, 'approval_mismatch']);
    expect(borrowed.body.error).toContain('requested by another caller');
    expect((await approval(id, ids.admin)).status).toBe('approved');
    expect((await negotiate(token.admin, id, { ...CREATE('same'), approvalId: ids.admin })).status).toBe(200);
    expect((await approval(id, ids.admin)).status).toBe('used');
    expect((await approval(id, ids.agent)).status).toBe('pending');
    await expectGauge(before + 2);
  });
});

describe('a request whose need has passed', () => {
  it.each(PRINCIPALS)(
    "is settled when the owner raises the level by hand (%s's request); its call then runs",
    async (who) => {
      const { id, token } = await setup();
      const before = await pendingInDatabase();
      const ref = await refuse(token[who], id, CREATE('by-hand'));
      // A request for more than the new level (export-tool's write-export needs 3) is left waiting.
      await setLevel(id, 'export-tool', 2);
      const higher = await refuse(token[who], id, {
        action: 'export-tool/write-export',
        args: { name: 'x', format: 'json', path: 'x.json' },
      });
      await expectGauge(before + 2);

      await setLevel(id, 'data-tool', 2);
      expect(await approval(id, ref)).toMatchObject({
        status: 'satisfied',
        decidedBy: `user:${alice.subject}`,
        decidedAt: expect.any(Number),
        reason: `The tool's level was set to 2 by user:${alice.subject}`,
        scope: null,
      });
      expect((await approval(id, higher)).status).toBe('pending');
      expect((await approvals(id, 'pending')).map((a) => a.id)).toEqual([higher]);
      await expectGauge(before + 1);

      // A retry naming the settled request is decided by the level, as any other call; it still covers
      // exactly its own call.
      const other = await negotiate(token[who], id, { ...CREATE('by-hand-2'), approvalId: ref });
      expect([other.status, other.body.code]).toEqual([409, 'approval_mismatch']);
      expect((await negotiate(token[who], id, { ...CREATE('by-hand'), approvalId: ref })).status).toBe(200);
      expect((await negotiate(token[who], id, CREATE('by-hand-3'))).status).toBe(200);
      // Deciding a settled request is a conflict, as for any request no longer pending.
      await request(t.app, alice.token)
        .post(`/conversations/${id}/approvals/${ref}/approve`)
        .send({ scope: 'once' })
        .expect(409);
      expect((await approval(id, ref)).status).toBe('satisfied');
    },
  );

  it("is settled when another principal's request is approved for the conversation", async () => {
    const { id, token, actor } = await setup();
    const before = await pendingInDatabase();
    const ids = {} as Record<Who, string>;
    for (const who of PRINCIPALS) ids[who] = await refuse(token[who], id, CREATE('conv'));
    const other = await refuse(token.agent, id, CREATE('other-args'));
    await expectGauge(before + 4);

    await request(t.app, alice.token)
      .post(`/conversations/${id}/approvals/${ids.agent}/approve`)
      .send({ scope: 'conversation' })
      .expect(200);
    // The approved one stays approved; every other request the raised level covers is settled by the approver.
    expect(await approval(id, ids.agent)).toMatchObject({ status: 'approved', scope: 'conversation', reason: null });
    for (const settled of [ids.admin, ids.owner, other]) {
      expect(await approval(id, settled)).toMatchObject({
        status: 'satisfied',
        decidedBy: `user:${alice.subject}`,
      });
    }
    await expectGauge(before);
    for (const who of PRINCIPALS) expect((await negotiate(token[who], id, CREATE(`conv-${who}`))).status).toBe(200);
    expect((await approvals(id)).map((a) => a.requestedBy).sort()).toEqual(
      [actor.admin, actor.owner, actor.agent, actor.agent].sort(),
    );
  });

  it("is settled by an agent's approved upgrade, and by the owner's own upgrade:, an agent's upgrade request too", async () => {
    const { id, token, actor } = await setup();
    const call = await refuse(token.agent, id, CREATE('up'));
    const up = await refuse(token.agent, id, { action: 'upgrade:data-tool:level-2' });
    await request(t.app, alice.token)
      .post(`/conversations/${id}/approvals/${up}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    await negotiate(token.agent, id, { action: 'upgrade:data-tool:level-2', approvalId: up }).expect(200);
    expect((await approval(id, up)).status).toBe('used');
    // The level it set was decided by the approver.
    expect(await approval(id, call)).toMatchObject({ status: 'satisfied', decidedBy: actor.owner });

    const EXPORT = { action: 'export-tool/write-export', args: { name: 'x', format: 'json', path: 'x.json' } };
    const exported = await refuse(token.admin, id, EXPORT);
    const exportUp = await refuse(token.agent, id, { action: 'upgrade:export-tool:level-3' });
    await negotiate(token.owner, id, { action: 'upgrade:export-tool:level-3' }).expect(200);
    for (const settled of [exported, exportUp]) {
      expect(await approval(id, settled)).toMatchObject({ status: 'satisfied', decidedBy: actor.owner });
    }
    expect(await approvals(id, 'pending')).toEqual([]);
  });

  it('is settled without deadlock while other requests of the tool are decided at the same time', async () => {
    // Two approvals for the conversation, an agent's approved upgrade and a level set by hand, all at once:
    // each locks its own request, then the conversation, then settles the others it covers. A request
    // another decision holds is left to that decision, so none waits on another.
    for (let round = 0; round < 5; round++) {
      const { id, token } = await setup();
      const a = await refuse(token.agent, id, CREATE('race-a'));
      const b = await refuse(token.owner, id, CREATE('race-b'));
      const up = await refuse(token.agent, id, { action: 'upgrade:data-tool:level-2' });
      await request(t.app, alice.token)
        .post(`/conversations/${id}/approvals/${up}/approve`)
        .send({ scope: 'once' })
        .expect(200);
      const results = await Promise.all([
        request(t.app, alice.token).post(`/conversations/${id}/approvals/${a}/approve`).send({ scope: 'conversation' }),
        request(t.app, alice.token).post(`/conversations/${id}/approvals/${b}/approve`).send({ scope: 'conversation' }),
        negotiate(token.agent, id, { action: 'upgrade:data-tool:level-2', approvalId: up }),
        request(t.app, alice.token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }),
      ]);
      // Nothing waits on another (no 500 of a deadlock). An approval whose request a level change settled
      // first answers 409 (only a pending request is approved) and that request reads `satisfied`.
      const [approveA, approveB, retried, byHand] = results;
      expect([retried.status, byHand.status]).toEqual([200, 200]);
      for (const [res, requestId] of [
        [approveA, a],
        [approveB, b],
      ] as const) {
        if (res.status === 200) continue;
        expect({ status: res.status, code: res.body.code }).toEqual({ status: 409, code: 'conflict' });
        expect((await approval(id, requestId)).status).toBe('satisfied');
      }
      expect(await approvals(id, 'pending')).toEqual([]);
    }
  });

  it.each(PRINCIPALS)(
    "is settled when the same principal's identical call runs without it (%s), and only then",
    async (who) => {
      const { id, token } = await setup();
      const before = await pendingInDatabase();
      const ref = await refuse(token[who], id, CREATE('ran'));
      const others = PRINCIPALS.filter((w) => w !== who);
      const othersRefs = await Promise.all(others.map((w) => refuse(token[w], id, CREATE('ran'))));
      // The level raised behind the service's back (as when a refusal races the owner's change and records
      // its request just after the change settled the others): nothing settled yet.
      await t.db.pool.query(
        `INSERT INTO tool_permissions (conversation_id, tool, level, upgraded_at) VALUES ($1, 'data-tool', 2, now())`,
        [id],
      );
      await expectGauge(before + 3);

      // Other args, by the same principal: its request for these args still waits.
      expect((await negotiate(token[who], id, CREATE('ran-other'))).status).toBe(200);
      expect((await approval(id, ref)).status).toBe('pending');

      expect((await negotiate(token[who], id, CREATE('ran'))).status).toBe(200);
      expect(await approval(id, ref)).toMatchObject({
        status: 'satisfied',
        decidedBy: null,
        decidedAt: expect.any(Number),
        reason: "The same call ran at the tool's level",
      });
      // Another principal's identical request is its own: it waits until that principal's call runs.
      for (const r of othersRefs) expect((await approval(id, r)).status).toBe('pending');
      await expectGauge(before + 2);
    },
  );

  it('is settled when the same call runs under an earlier approval granted once', async () => {
    const { id, token } = await setup();
    const first = await refuse(token.agent, id, CREATE('twice'));
    await request(t.app, alice.token)
      .post(`/conversations/${id}/approvals/${first}/approve`)
      .send({ scope: 'once' })
      .expect(200);
    // Asked again without the id: a second request for the same call, while the first is approved.
    const second = await refuse(token.agent, id, CREATE('twice'));
    expect(second).not.toBe(first);
    expect((await negotiate(token.agent, id, { ...CREATE('twice'), approvalId: first })).status).toBe(200);
    expect((await approval(id, first)).status).toBe('used');
    expect((await approval(id, second)).status).toBe('satisfied');
    expect(await approvals(id, 'pending')).toEqual([]);
  });

  it('adds a statement to a successful call only when its principal has a request for that action', async () => {
    // Counted on a server: the embedded database's connections send statements through their own query.
    if (!serverUrl()) return;
    const { id, token } = await setup();
    await setLevel(id, 'data-tool', 2);
    await negotiate(token.agent, id, CREATE('doc')).expect(200);
    const update = (n: number): Body => ({ action: 'update-resource', args: { name: 'doc', data: { n } } });
    const plain = await sqlStatements(() => negotiate(token.agent, id, update(1)).expect(200));
    expect(plain.map((q) => q.split(/\s+/)[0])).toEqual(['decision_select', 'resource_update+audit_pending']);

    // A request of this agent for update-resource (the level lowered, refused, raised behind the service's back).
    await setLevel(id, 'data-tool', 1);
    const ref = await refuse(token.agent, id, update(2));
    await t.db.pool.query(`UPDATE tool_permissions SET level = 2 WHERE conversation_id = $1`, [id]);
    // The owner's identical call: the request is not the owner's, so nothing more is sent and it still waits.
    const owners = await sqlStatements(() => negotiate(token.owner, id, update(2)).expect(200));
    expect(owners.map((q) => q.split(/\s+/)[0])).toEqual(['decision_select', 'resource_update+audit_pending']);
    expect((await approval(id, ref)).status).toBe('pending');
    // The agent's: one statement more, which settles it.
    const agents = await sqlStatements(() => negotiate(token.agent, id, update(2)).expect(200));
    expect(agents.map((q) => q.split(/\s+/)[0])).toEqual([
      'decision_select',
      'resource_update+audit_pending',
      'UPDATE',
    ]);
    expect((await approval(id, ref)).status).toBe('satisfied');
  });
});

describe('a call with invalid args at too low a level', () => {
  it.each(PRINCIPALS)('answers 400 invalid_args and records nothing (%s), dry run or not', async (who) => {
    const { id, token } = await setup();
    const before = await pendingInDatabase();
    for (const body of [
      { action: 'data-tool/create-resource', args: { data: 1 } },
      { action: 'data-tool/create-resource', args: { name: 42, data: 1 } },
    ]) {
      const res = await negotiate(token[who], id, body);
      expect([res.status, res.body.code]).toEqual([400, 'invalid_args']);
      expect(res.body.approval).toBeUndefined();
    }
    const dry = await negotiate(token[who], id, { action: 'data-tool/create-resource', args: {}, dryRun: true });
    expect([dry.status, dry.body.code]).toEqual([400, 'invalid_args']);
    expect(await approvals(id)).toEqual([]);
    await expectGauge(before);
    // Valid args at the same level are still refused for approval.
    await refuse(token[who], id, CREATE('valid'));
    await expectGauge(before + 1);
  });

  it.each(PRINCIPALS)(
    'answers 400 invalid_args for a TOOLS_DIR tool, its args checked in its worker (%s)',
    async (who) => {
      const { id, token } = await setup();
      const bad = await negotiate(token[who], id, { action: 'sandboxed-tool/write-two', args: { first: 1 } }, isolated);
      expect([bad.status, bad.body.code]).toEqual([400, 'invalid_args']);
      expect(bad.body.error).toMatch(/first/);
      expect(await approvals(id)).toEqual([]);
      const good = await negotiate(
        token[who],
        id,
        { action: 'sandboxed-tool/write-two', args: { first: 'a', second: 'b' } },
        isolated,
      );
      expect([good.status, good.body.code]).toEqual([403, 'permission_required']);
      expect((await approvals(id)).map((a) => a.id)).toEqual([good.body.approval.id]);
    },
  );
});
