/**
 * A level change is one transaction (PermissionService.setLevel): the
 * conversation created or locked, the level read, the level and its history
 * row written, the conversation touched, what it makes unnecessary settled,
 * and the COMMIT that carries its audit entries (two round trips fewer than
 * the two implementations it replaced, whose entry came after the COMMIT). Checked over real HTTP on a real Postgres, for
 * negotiate's `upgrade:` and PUT …/permissions/{tool}.
 */
import { request } from '../support/auth';
import { serverUrl } from '../support/db-server';
import { uniqueId } from '../support/ids';
import { type MintedKey, createConversation, mintKey } from '../support/identity';
import { sqlStatements } from '../support/sql-statements';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let alice: MintedKey;
let bob: MintedKey;

beforeAll(async () => {
  t = await createTestApp();
  alice = await mintKey(t.app, 'user', uniqueId('alice'));
  bob = await mintKey(t.app, 'user', uniqueId('bob'));
});

afterAll(async () => {
  await t?.close();
});

const upgrade = (id: string, level: number, token = alice.token) =>
  request(t.app, token)
    .post(`/conversations/${id}/negotiate`)
    .send({ action: `upgrade:data-tool:level-${level}` });
const put = (id: string, level: number, token = alice.token) =>
  request(t.app, token).put(`/conversations/${id}/permissions/data-tool`).send({ level });

interface Entry {
  event: string;
  actor: string;
  tool?: string;
  action?: string;
  requestId: string;
}

async function audit(id: string): Promise<Entry[]> {
  const res = await request(t.app, alice.token).get(`/conversations/${id}/audit`).expect(200);
  return (res.body.entries as Entry[]).map(({ event, actor, tool, action, requestId }) => ({
    event,
    actor,
    ...(tool !== undefined ? { tool } : {}),
    ...(action !== undefined ? { action } : {}),
    requestId,
  }));
}

/** BEGIN; the conversation created or locked; the level read; level, history, updated_at; the settling. */
const START = ['BEGIN', 'INSERT', 'SELECT', 'INSERT', 'INSERT', 'UPDATE', 'UPDATE'];

describe('a level change', () => {
  it('is eight statements, its audit entries sent with its COMMIT', async () => {
    // Counted on a server: the embedded database's connections send statements through their own query.
    if (!serverUrl()) return;
    const id = uniqueId('lvl');
    await createConversation(t.app, alice.token, id);
    for (const change of [() => upgrade(id, 2).expect(200), () => put(id, 3).expect(200)]) {
      const sent = await sqlStatements(change);
      expect(sent.map((q) => q.split(/\s+/)[0])).toEqual(START.concat('INSERT'));
      expect(sent[7]).toMatch(/^INSERT INTO audit_pending .*'permission\.changed'.*;\nCOMMIT$/s);
    }
    // On first use the conversation is created in the same transaction; both entries go with its COMMIT.
    const sent = await sqlStatements(() => upgrade(uniqueId('lvl'), 2).expect(200));
    expect(sent).toHaveLength(8);
    expect(sent[7]).toMatch(
      /'conversation\.created'.*;\nINSERT INTO audit_pending .*'permission\.changed'.*;\nCOMMIT$/s,
    );
  });

  it('records its history row and entries in order, by whoever set it, under the request id', async () => {
    const id = uniqueId('lvl');
    const up = await upgrade(id, 2).set('X-Request-Id', 'req-up').expect(200);
    expect(up.body.output).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });
    const set = await put(id, 1).set('X-Request-Id', 'req-put').expect(200);
    expect(set.body).toEqual({ tool: 'data-tool', level: 1, previousLevel: 2 });
    const actor = `user:${alice.subject}`;
    const history = await request(t.app, alice.token).get(`/conversations/${id}/permissions/history`).expect(200);
    expect(history.body.events.map((e: { fromLevel: number; toLevel: number; actor: string }) => e)).toEqual([
      expect.objectContaining({ tool: 'data-tool', fromLevel: 1, toLevel: 2, actor }),
      expect.objectContaining({ tool: 'data-tool', fromLevel: 2, toLevel: 1, actor }),
    ]);
    expect((await audit(id)).filter((e) => e.event !== 'negotiate')).toEqual([
      { event: 'conversation.created', actor, requestId: 'req-up' },
      { event: 'permission.changed', actor, tool: 'data-tool', action: 'level-1-to-2', requestId: 'req-up' },
      { event: 'permission.changed', actor, tool: 'data-tool', action: 'level-2-to-1', requestId: 'req-put' },
    ]);
  });

  it("refused in another's conversation leaves nothing behind", async () => {
    const id = uniqueId('lvl');
    await createConversation(t.app, alice.token, id);
    await put(id, 2, bob.token).expect(404);
    expect((await upgrade(id, 3, bob.token)).status).toBe(404);
    const history = await request(t.app, alice.token).get(`/conversations/${id}/permissions/history`).expect(200);
    expect(history.body.events).toEqual([]);
    expect((await audit(id)).map((e) => e.event)).toEqual(['conversation.created']);
  });
});
