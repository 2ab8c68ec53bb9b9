/**
 * Idempotency-Key on POST /conversations/{id}/negotiate (API.md,
 * Idempotency), over real HTTP on a real Postgres: replays counted against
 * a resource's version, another body, racing requests, a restart, the
 * scope of a key, bad headers, the purge, what is not kept, and the SQL
 * round trips with and without a key.
 */
import type { Server } from 'node:http';
import { Client } from 'pg';
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { serverUrl } from '../support/db-server';
import { sqlStatements } from '../support/sql-statements';
import { uniqueId } from '../support/ids';
import { expectProblem, listen, mintKey, mintAgentKey, stopListening } from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';
import { lockKey } from '../../src/db/idempotency-store';

let t: TestApp;
let server: Server;
let base: string;

beforeAll(async () => {
  // The audit's batches and sealer wait (they are written at close): the round-trip counts below see
  // only the requests' own statements. A write action's entry goes with its COMMIT either way.
  t = await createTestApp({}, { audit: { flushMs: 3_600_000, flushMax: 1_000_000, sealMs: 3_600_000 } });
  ({ server, base } = await listen(t.app));
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

type Body = Record<string, unknown>;

function negotiate(
  target: TestApp['app'] | string,
  id: string,
  body: Body,
  key?: string,
  token?: string,
): supertest.Test {
  const req = request(target, token).post(`/conversations/${id}/negotiate`);
  if (key !== undefined) void req.set('Idempotency-Key', key);
  return req.send(body);
}

const update = (n: number): Body => ({ action: 'data-tool/update-resource', args: { name: 'doc', data: { n } } });

/** A conversation (the test admin's unless `token`) where data-tool writes, holding `doc` at version 1. */
async function conversationWithDoc(token?: string): Promise<string> {
  const id = uniqueId('idem');
  await negotiate(base, id, { action: 'upgrade:data-tool:level-2' }, undefined, token).expect(200);
  await negotiate(
    base,
    id,
    { action: 'data-tool/create-resource', args: { name: 'doc', data: { n: 0 } } },
    undefined,
    token,
  ).expect(200);
  return id;
}

async function version(id: string): Promise<number> {
  const { rows } = await t.db.pool.query<{ version: number }>(
    'SELECT version FROM resources WHERE conversation_id = $1 AND name = $2',
    [id, 'doc'],
  );
  return rows[0]!.version;
}

/** The test admin as src/core/principal.ts principalKey names it. */
async function adminPrincipal(): Promise<string> {
  const me = (await request(base, TEST_ADMIN_TOKEN).get('/me').expect(200)).body as {
    keyId?: string;
    role: string;
    subject: string;
  };
  return me.keyId !== undefined ? `key:${me.keyId}` : `${me.role}:${me.subject}`;
}

async function keptRows(id: string): Promise<number> {
  const { rows } = await t.db.pool.query('SELECT 1 FROM idempotency_keys WHERE conversation_id = $1', [id]);
  return rows.length;
}

describe('replay', () => {
  it('a repeat with the same key and body returns the kept outcome and runs nothing', async () => {
    const id = await conversationWithDoc();
    const first = await negotiate(base, id, update(1), 'k-1').expect(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.body).toEqual(
      expect.objectContaining({ success: true, output: expect.objectContaining({ version: 2 }) }),
    );
    expect(await version(id)).toBe(2);
    for (let i = 0; i < 3; i++) {
      const again = await negotiate(base, id, update(1), 'k-1');
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      // The same text, key order included.
      expect(again.text).toBe(first.text);
    }
    // The same body with its keys in another order is the same request (canonical JSON).
    const reordered = await request(base)
      .post(`/conversations/${id}/negotiate`)
      .set('Idempotency-Key', 'k-1')
      .set('Content-Type', 'application/json')
      .send('{"args":{"data":{"n":1},"name":"doc"},"action":"data-tool/update-resource"}');
    expect(reordered.status).toBe(200);
    expect(reordered.headers['idempotent-replayed']).toBe('true');
    expect(await version(id)).toBe(2);
  });

  it('another body with the same key is 422 idempotency_key_reused and runs nothing', async () => {
    const id = await conversationWithDoc();
    await negotiate(base, id, update(1), 'k-2').expect(200);
    expectProblem(await negotiate(base, id, update(2), 'k-2'), 422, 'idempotency_key_reused');
    expectProblem(await negotiate(base, id, { ...update(1), dryRun: true }, 'k-2'), 422, 'idempotency_key_reused');
    expect(await version(id)).toBe(2);
    // A new key runs.
    await negotiate(base, id, update(2), 'k-3').expect(200);
    expect(await version(id)).toBe(3);
  });

  it('20 concurrent requests with one key run the action once', async () => {
    const id = await conversationWithDoc();
    const responses = await Promise.all(Array.from({ length: 20 }, () => negotiate(base, id, update(7), 'race')));
    const ran = responses.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
    expect(ran).toHaveLength(1);
    for (const r of responses) {
      if (r.status === 200) expect(r.body).toEqual(ran[0]!.body);
      else expectProblem(r, 409, 'conflict');
    }
    expect(await version(id)).toBe(2);
    const after = await negotiate(base, id, update(7), 'race').expect(200);
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(await version(id)).toBe(2);
  });

  // Needs two sessions: on the embedded database (one session) transactions never overlap.
  (serverUrl() ? it : it.skip)(
    'while a request holds the key it is 409 conflict at once; when that one rolls back, the key runs',
    async () => {
      const id = await conversationWithDoc();
      // Another request's transaction, as the claim leaves it: the key's lock and an uncommitted claim row.
      const other = new Client(t.database.client);
      await other.connect();
      try {
        await other.query('BEGIN');
        const ref = { conversationId: id, principal: await adminPrincipal(), key: 'held' };
        await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey(ref)]);
        await other.query(
          'INSERT INTO idempotency_keys (conversation_id, principal, key, request_digest) VALUES ($1, $2, $3, $4)',
          [ref.conversationId, ref.principal, ref.key, 'x'],
        );
        const started = Date.now();
        expectProblem(await negotiate(base, id, update(1), 'held'), 409, 'conflict');
        expect(Date.now() - started).toBeLessThan(2000);
        expect(await version(id)).toBe(1);
        await other.query('ROLLBACK');
        const ran = await negotiate(base, id, update(1), 'held').expect(200);
        expect(ran.headers['idempotent-replayed']).toBeUndefined();
        expect(await version(id)).toBe(2);
      } finally {
        await other.end();
      }
    },
  );

  it('a kept outcome is replayed after a restart (another app on the same database)', async () => {
    const id = await conversationWithDoc();
    const first = await createTestApp({}, { replicaOf: t });
    const ran = await negotiate(first.app, id, update(3), 'restart').expect(200);
    await first.close();
    const second = await createTestApp({}, { replicaOf: t });
    try {
      const again = await negotiate(second.app, id, update(3), 'restart').expect(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(ran.body);
      expect(await version(id)).toBe(2);
    } finally {
      await second.close();
    }
  });
});

describe('scope', () => {
  it('a key belongs to one principal and one conversation', async () => {
    const user = await mintKey(base, 'user', uniqueId('idem-user'));
    const id = await conversationWithDoc(user.token);
    await negotiate(base, id, update(1), 'shared', user.token).expect(200);
    expect(await version(id)).toBe(2);
    // The admin, an agent of the conversation: the same key and body are theirs to use, and run.
    const admin = await negotiate(base, id, update(1), 'shared').expect(200);
    expect(admin.headers['idempotent-replayed']).toBeUndefined();
    expect(await version(id)).toBe(3);
    const agent = await mintAgentKey(base, user.token, id);
    const byAgent = await negotiate(base, id, update(1), 'shared', agent.token).expect(200);
    expect(byAgent.headers['idempotent-replayed']).toBeUndefined();
    expect(await version(id)).toBe(4);
    // Another conversation of the same user: runs there.
    const other = await conversationWithDoc(user.token);
    const there = await negotiate(base, other, update(1), 'shared', user.token).expect(200);
    expect(there.headers['idempotent-replayed']).toBeUndefined();
    expect(await version(other)).toBe(2);
    // The user's repeat in the first conversation is still a replay.
    const replay = await negotiate(base, id, update(1), 'shared', user.token).expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await version(id)).toBe(4);
    // An agent's key on another conversation: 404, as without a key.
    expectProblem(await negotiate(base, other, update(1), 'shared', agent.token), 404, 'not_found');
  });
});

describe('bad keys', () => {
  it.each([
    ['empty', ''],
    ['a space', 'a b'],
    ['256 characters', 'x'.repeat(256)],
    ['non-ASCII', 'clé'],
    ['a tab', 'a\tb'],
  ])('%s is 400 validation_failed and runs nothing', async (_what, key) => {
    const id = await conversationWithDoc();
    const res = await negotiate(base, id, update(1), key);
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.body)).toMatch(/Idempotency-Key/i);
    expect(await version(id)).toBe(1);
    expect(await keptRows(id)).toBe(0);
  });

  it('255 visible ASCII characters are a key', async () => {
    const id = await conversationWithDoc();
    const key = '!~' + 'k'.repeat(253);
    await negotiate(base, id, update(1), key).expect(200);
    const again = await negotiate(base, id, update(1), key).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});

describe('what is kept', () => {
  it('a refusal before anything ran is not kept: after the upgrade the retry with the key runs', async () => {
    const id = uniqueId('idem');
    await negotiate(base, id, { action: 'data-tool/create-resource', args: { name: 'doc', data: 1 } }, 'c-1').expect(
      403,
    );
    expect(await keptRows(id)).toBe(0);
    await negotiate(base, id, { action: 'upgrade:data-tool:level-2' }).expect(200);
    const ran = await negotiate(
      base,
      id,
      { action: 'data-tool/create-resource', args: { name: 'doc', data: 1 } },
      'c-1',
    );
    expect(ran.status).toBe(200);
    expect(ran.headers['idempotent-replayed']).toBeUndefined();
    expect(await keptRows(id)).toBe(1);
  });

  it("a tool's failure rolls back its claim with its writes: the retry runs again", async () => {
    const id = await conversationWithDoc();
    const body = { action: 'data-tool/update-resource', args: { name: 'missing', data: 1 } };
    const failed = await negotiate(base, id, body, 'f-1').expect(404);
    expect(failed.body.code).toBe('resource_not_found');
    expect(await keptRows(id)).toBe(0);
    await negotiate(base, id, { action: 'data-tool/create-resource', args: { name: 'missing', data: 0 } }).expect(200);
    const ran = await negotiate(base, id, body, 'f-1').expect(200);
    expect(ran.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a read action with a key is kept and replayed', async () => {
    const id = await conversationWithDoc();
    const read = { action: 'data-tool/read-resource', args: { name: 'doc' } };
    const first = await negotiate(base, id, read, 'r-1').expect(200);
    await negotiate(base, id, update(5)).expect(200);
    const again = await negotiate(base, id, read, 'r-1').expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });
});

describe('pool', () => {
  it("keyed read actions read in their own transaction: more of them than the pool's connections all answer", async () => {
    const id = await conversationWithDoc();
    // The test app's pool has 5 connections; each keyed call holds one for its transaction.
    const list = { action: 'data-tool/list-resources', args: {} };
    const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => negotiate(base, id, list, `pool-${i}`)));
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200));
  });
});

describe('purge', () => {
  it('an outcome older than 24 hours is ignored, then purged, and the key runs again', async () => {
    const id = await conversationWithDoc();
    const backdate = (): Promise<unknown> =>
      t.db.pool.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE conversation_id = $1`,
        [id],
      );
    await negotiate(base, id, update(1), 'old').expect(200);
    await backdate();
    // Expired but not yet purged: ignored, and its row taken over by the new run.
    const ranAgain = await negotiate(base, id, update(1), 'old').expect(200);
    expect(ranAgain.headers['idempotent-replayed']).toBeUndefined();
    expect(await version(id)).toBe(3);
    await backdate();
    expect(await t.services.idempotency.purge()).toBeGreaterThanOrEqual(1);
    expect(await keptRows(id)).toBe(0);
    const third = await negotiate(base, id, update(1), 'old').expect(200);
    expect(third.headers['idempotent-replayed']).toBeUndefined();
    expect(await version(id)).toBe(4);
    // A fresh outcome is not purged.
    expect(await t.services.idempotency.purge()).toBe(0);
    expect(await keptRows(id)).toBe(1);
  });
});

describe('SQL round trips', () => {
  /** Statements sent to Postgres while `fn` runs (background work left out: test/support/sql-statements.ts). */
  async function statements(fn: () => Promise<unknown>): Promise<string[]> {
    return (
      (await sqlStatements(fn))
        // A write action's audit entry is sent with its BEGIN (with its COMMIT when the unit began
        // earlier, for a key's claim), in one round trip.
        .map((q) =>
          /^INSERT INTO audit_pending\b[\s\S]*;\s*COMMIT$/.test(q)
            ? 'audit+COMMIT'
            : /^BEGIN;\s*INSERT INTO audit_pending\b/.test(q)
              ? 'BEGIN+audit'
              : q.split(/\s+/)[0]!,
        )
    );
  }

  // Counted on a server: the embedded database's connections send statements unnamed, through their own query.
  (serverUrl() ? it : it.skip)('without a key: read 1, write 4; with a key: counted', async () => {
    const id = await conversationWithDoc();
    const read = { action: 'data-tool/read-resource', args: { name: 'doc' } };
    expect(await statements(() => negotiate(base, id, read).expect(200))).toEqual(['decision_prefetch']);
    // update-resource declares singleWrite: its write and its audit entry are one autocommitted statement.
    expect(await statements(() => negotiate(base, id, update(1)).expect(200))).toEqual([
      'decision_select',
      'resource_update+audit_pending',
    ]);
    expect(await statements(() => negotiate(base, id, update(2), 'rt-1').expect(200))).toEqual([
      'idempotency_find',
      'decision_select',
      'BEGIN',
      'idempotency_claim',
      'resource_update',
      'idempotency_keep',
      'audit+COMMIT',
    ]);
    expect(await statements(() => negotiate(base, id, update(2), 'rt-1').expect(200))).toEqual(['idempotency_find']);
    expect(await statements(() => negotiate(base, id, read, 'rt-2').expect(200))).toEqual([
      'idempotency_find',
      'decision_prefetch',
      'BEGIN',
      'idempotency_claim',
      'idempotency_keep',
      'audit+COMMIT',
    ]);
  });
});
