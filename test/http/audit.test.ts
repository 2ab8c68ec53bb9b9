/**
 * The audit log (API.md, Audit) over real HTTP on a real database: an entry
 * per event kind, args kept only as their digest, the hash chain verified and
 * tampering by SQL detected at the first broken seq, entries outliving their
 * conversation, a write action's entry committed with its writes (none for a
 * failing one), queued read entries appearing after the flush, and who may
 * read the log.
 */
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type MintedKey,
  as,
  createConversation,
  expectProblem,
  listen,
  mcpConnect,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { SANDBOXED_TOOL, toolsDirWith } from '../support/isolation-tools';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { entryHash, GENESIS_HASH } from '../../src/core/audit';
import { argsDigest, canonicalJson } from '../../src/core/canonical-json';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

type Entry = Record<string, unknown> & { seq: number; event: string; outcome: string; requestId: string };

let t: TestApp;
let server: Server | undefined;
let app: string;
let toolsDir: string;
let owner: MintedKey;
let other: MintedKey;

beforeAll(async () => {
  toolsDir = toolsDirWith({ 'sandboxed-tool.js': SANDBOXED_TOOL });
  t = await createTestApp({ TOOLS_DIR: toolsDir });
  ({ server, base: app } = await listen(t.app));
  owner = await mintKey(app, 'user', uniqueId('audit-owner'));
  other = await mintKey(app, 'user', uniqueId('audit-other'));
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
  if (toolsDir) rmSync(toolsDir, { recursive: true, force: true });
});

async function entries(conversationId: string, token = owner.token): Promise<Entry[]> {
  const res = await as(app, token).get(`/conversations/${conversationId}/audit?limit=500`).expect(200);
  return (res.body as { entries: Entry[] }).entries;
}

async function verify(conversationId: string): Promise<Record<string, unknown>> {
  return (await as(app, TEST_ADMIN_TOKEN).get(`/conversations/${conversationId}/audit/verify`).expect(200))
    .body as Record<string, unknown>;
}

function negotiate(conversationId: string, body: Record<string, unknown>, requestId?: string, token = owner.token) {
  const req = as(app, token).post(`/conversations/${conversationId}/negotiate`);
  if (requestId) void req.set('X-Request-Id', requestId);
  return req.send(body);
}

/** Rows for this request id, sealed or not, read straight from the tables (no flush, no seal). */
async function storedRows(requestId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await t.db.pool.query(
    `SELECT to_jsonb(p) AS row FROM audit_pending p WHERE request_id = $1
     UNION ALL SELECT to_jsonb(l) FROM audit_log l WHERE request_id = $1`,
    [requestId],
  );
  return rows.map((r: { row: Record<string, unknown> }) => r.row);
}

describe('an entry per event', () => {
  it('a time-limited grant: the raise by the approver and the return by expiry', async () => {
    const id = uniqueId('audit-grant');
    await createConversation(app, owner.token, id);
    const agent = await mintAgentKey(app, owner.token, id);
    const args = { name: 'doc', data: 1 };
    const refused = await negotiate(id, { action: 'create-resource', args }, undefined, agent.token).expect(403);
    const approvalId = (refused.body as { approval: { id: string } }).approval.id;
    await as(app, owner.token)
      .post(`/conversations/${id}/approvals/${approvalId}/approve`)
      .send({ scope: 'conversation', expiresInSeconds: 1 })
      .expect(200);
    await waitFor('the grant to end', async () => {
      await t.services.approvals.sweepOnce();
      return (await entries(id)).some((e) => e.event === 'permission.changed' && e.actor === 'expiry');
    });
    const changes = (await entries(id)).filter((e) => e.event === 'permission.changed');
    expect(changes).toEqual([
      expect.objectContaining({ actor: `user:${owner.subject}`, tool: 'data-tool', action: 'level-1-to-2' }),
      expect.objectContaining({ actor: 'expiry', tool: 'data-tool', action: 'level-2-to-1' }),
    ]);
    expect(await verify(id)).toMatchObject({ ok: true });
  });

  it('an id deleted and created again by someone else: the new owner reads only its own entries', async () => {
    const id = uniqueId('audit-reused');
    await negotiate(id, { action: 'calculator/add', args: { a: 1, b: 2 } }, 'rid-first-owner').expect(200);
    await as(app, owner.token).delete(`/conversations/${id}`).expect(204);
    await createConversation(app, other.token, id);
    const seen = await entries(id, other.token);
    expect(seen.map((e) => e.actor)).toEqual([`user:${other.subject}`]);
    expect(seen.map((e) => e.event)).toEqual(['conversation.created']);
    expect(await as(app, other.token).get(`/conversations/${id}/audit/verify`).expect(200)).toMatchObject({
      body: { ok: true, entries: 1 },
    });
    // Admins read every entry of the id, the earlier conversation's too.
    const all = await entries(id, TEST_ADMIN_TOKEN);
    expect(all.filter((e) => e.actor === `user:${owner.subject}`).length).toBeGreaterThanOrEqual(3);
    expect(all.some((e) => e.requestId === 'rid-first-owner')).toBe(true);
  });

  it('refuses an after beyond the largest exact integer with 400', async () => {
    const id = uniqueId('audit-after');
    await createConversation(app, owner.token, id);
    const res = await as(app, owner.token).get(`/conversations/${id}/audit?after=9223372036854775807`);
    expect(res.status).toBe(400);
  });

  it('records the creation on first use by every path that creates', async () => {
    const viaResource = uniqueId('audit-first-resource');
    await as(app, owner.token).put(`/conversations/${viaResource}/resources/doc`).send({ data: 1 }).expect(201);
    const viaPermission = uniqueId('audit-first-permission');
    await as(app, owner.token)
      .put(`/conversations/${viaPermission}/permissions/data-tool`)
      .send({ level: 2 })
      .expect(200);
    const viaListTools = uniqueId('audit-first-list');
    await negotiate(viaListTools, { action: 'list-tools' }).expect(200);
    const viaUpgrade = uniqueId('audit-first-upgrade');
    await negotiate(viaUpgrade, { action: 'upgrade:data-tool:level-2' }).expect(200);
    const viaMcp = uniqueId('audit-first-mcp');
    const mcp = await mcpConnect(app, viaMcp, owner.token);
    await mcp.close();
    for (const id of [viaResource, viaPermission, viaListTools, viaUpgrade, viaMcp]) {
      const created = (await entries(id)).filter((e) => e.event === 'conversation.created');
      expect({ id, created }).toEqual({
        id,
        created: [expect.objectContaining({ actor: `user:${owner.subject}`, outcome: 'success' })],
      });
    }
  });

  it('an approval request and its decision, with the approval id', async () => {
    const id = uniqueId('audit-approval');
    await createConversation(app, owner.token, id);
    const args = { name: 'doc', data: { secret: 'do-not-store-this' } };
    const refused = await negotiate(id, { action: 'create-resource', args }, uniqueId('req-refused')).expect(403);
    const approvalId = (refused.body as { approval: { id: string } }).approval.id;
    await as(app, owner.token)
      .post(`/conversations/${id}/approvals/${approvalId}/approve`)
      .set('X-Request-Id', 'req-approve')
      .send({ scope: 'once' })
      .expect(200);
    const log = await entries(id);
    const requested = log.find((e) => e.event === 'approval.requested');
    expect(requested).toMatchObject({ approvalId, outcome: 'pending', argsDigest: argsDigest(args) });
    expect(log.find((e) => e.event === 'negotiate' && e.outcome === 'permission_required')).toMatchObject({
      approvalId,
    });
    expect(log.find((e) => e.event === 'approval.decided')).toMatchObject({
      approvalId,
      outcome: 'approved:once',
      requestId: 'req-approve',
      actor: `user:${owner.subject}`,
    });
    expect(JSON.stringify(log)).not.toContain('do-not-store-this');
    expect(await verify(id)).toMatchObject({ ok: true });
  });

  it('records conversation creation, permission change, negotiate (success, refusal, error, dry run), keys and deletion', async () => {
    const c = uniqueId('audit-events');
    await createConversation(app, owner.token, c);
    await as(app, owner.token).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    await negotiate(c, { action: 'create-resource', args: { name: 'doc', data: { v: 1 } } }, 'rid-create').expect(200);
    await negotiate(c, { action: 'read-resource', args: { name: 'doc' } }, 'rid-read').expect(200);
    await negotiate(c, { action: 'read-resource', args: { name: 'nope' } }, 'rid-missing').expect(404);
    await negotiate(
      c,
      { action: 'export-tool/write-export', args: { name: 'doc', format: 'json', path: 'doc.json' } },
      'rid-refused',
    ).expect(403);
    await negotiate(c, { action: 'update-resource', args: { name: 'doc', data: {} }, dryRun: true }, 'rid-dry').expect(
      200,
    );
    await negotiate(c, { action: 'no-such-action' }, 'rid-none').expect(404);
    await negotiate(c, { action: 'upgrade:data-tool:level-3' }, 'rid-upgrade').expect(200);
    const agent = await mintAgentKey(app, owner.token, c);
    await as(app, owner.token).delete(`/keys/${agent.id}`).expect(204);

    const list = await entries(c);
    const by = (rid: string): Entry[] => list.filter((e) => e.requestId === rid);
    expect(list[0]).toMatchObject({
      event: 'conversation.created',
      actor: `user:${owner.subject}`,
      outcome: 'success',
    });
    expect(list.filter((e) => e.event === 'permission.changed')).toEqual([
      expect.objectContaining({ tool: 'data-tool', action: 'level-1-to-2' }),
      expect.objectContaining({ tool: 'data-tool', action: 'level-2-to-3', requestId: 'rid-upgrade' }),
    ]);
    expect(by('rid-create')).toEqual([
      expect.objectContaining({
        event: 'negotiate',
        tool: 'data-tool',
        action: 'create-resource',
        outcome: 'success',
        status: 200,
        argsDigest: argsDigest({ name: 'doc', data: { v: 1 } }),
      }),
    ]);
    expect(by('rid-read')).toEqual([expect.objectContaining({ outcome: 'success', action: 'read-resource' })]);
    expect(by('rid-missing')).toEqual([expect.objectContaining({ outcome: 'resource_not_found', status: 404 })]);
    // The refusal, and the approval request it recorded (the same approval id on both).
    const refused = by('rid-refused');
    expect(refused).toEqual([
      expect.objectContaining({ event: 'negotiate', outcome: 'permission_required', status: 403 }),
      expect.objectContaining({ event: 'approval.requested', outcome: 'pending' }),
    ]);
    expect(refused[1]!.approvalId).toBe(refused[0]!.approvalId);
    expect(by('rid-dry')).toEqual([expect.objectContaining({ event: 'negotiate.dry_run', outcome: 'success' })]);
    expect(by('rid-none')).toEqual([expect.objectContaining({ outcome: 'no_tool', action: 'no-such-action' })]);
    expect(list.filter((e) => e.event.startsWith('key.'))).toEqual([
      expect.objectContaining({ event: 'key.created', action: agent.id }),
      expect.objectContaining({ event: 'key.revoked', action: agent.id }),
    ]);
    // Oldest first, and every seq greater than the one before.
    expect(list.map((e) => e.seq)).toEqual([...list.map((e) => e.seq)].sort((a, b) => a - b));

    await as(app, owner.token).delete(`/conversations/${c}`).expect(204);
    const afterDelete = await entries(c, TEST_ADMIN_TOKEN);
    expect(afterDelete.at(-1)).toMatchObject({ event: 'conversation.deleted', actor: `user:${owner.subject}` });
  });

  it('records creation on first use by negotiate, and an MCP call with its request id', async () => {
    const c = uniqueId('audit-first-use');
    await negotiate(c, { action: 'calculator/add', args: { a: 1, b: 2 } }, 'rid-first').expect(200);
    const mcp = await mcpConnect(app, c, owner.token);
    try {
      await mcp.client.callTool({ name: 'calculator_add', arguments: { a: 2, b: 3 } });
    } finally {
      await mcp.close();
    }
    const list = await entries(c);
    expect(list.filter((e) => e.event === 'conversation.created')).toHaveLength(1);
    const calls = list.filter((e) => e.event === 'negotiate' && e.action === 'add');
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatchObject({ outcome: 'success', argsDigest: argsDigest({ a: 2, b: 3 }) });
    expect(calls[1]!.requestId).toMatch(/\S/);
  });

  it('keeps admin and user keys in the _system chain, read by admins only', async () => {
    const minted = await mintKey(app, 'user', uniqueId('audit-minted'));
    const list = await entries('_system', TEST_ADMIN_TOKEN);
    expect(list.find((e) => e.action === minted.id)).toMatchObject({ event: 'key.created', actor: 'admin:admin' });
    expectProblem(await as(app, owner.token).get('/conversations/_system/audit'), 404, 'not_found');
  });

  it('keeps the _system id from becoming a conversation, on every path that creates one', async () => {
    const before = (await entries('_system', TEST_ADMIN_TOKEN)).length;
    for (const token of [owner.token, TEST_ADMIN_TOKEN]) {
      const user = as(app, token);
      const attempts = [
        user.post('/conversations').send({ id: '_system' }),
        user.post('/conversations/_system/negotiate').send({ action: 'calculator/add', args: { a: 1, b: 2 } }),
        user.put('/conversations/_system/permissions/data-tool').send({ level: 2 }),
        user.put('/conversations/_system/resources/doc').send({ data: { secret: 1 } }),
      ];
      for (const res of await Promise.all(attempts)) {
        expectProblem(res, 400, 'validation_failed');
        expect(res.body.detail).toContain('reserved');
      }
    }
    const { rows } = await t.db.pool.query('SELECT 1 FROM conversations WHERE id = $1', ['_system']);
    expect(rows).toHaveLength(0);
    // Nothing of those attempts reached the chain an owner would have read.
    const after = await entries('_system', TEST_ADMIN_TOKEN);
    expect(after.slice(before).filter((e) => e.event !== 'key.created')).toEqual([]);
  });
});

describe('arguments', () => {
  it('are never stored: only their digest', async () => {
    const c = uniqueId('audit-args');
    const secret = `s3cret-${uniqueId('v')}`;
    await as(app, owner.token).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    await negotiate(c, { action: 'create-resource', args: { name: 'x', data: { secret } } }, 'rid-args').expect(200);
    await negotiate(c, { action: 'read-resource', args: { name: secret } }, 'rid-args-read').expect(404);
    await entries(c); // seals
    const { rows } = await t.db.pool.query(
      'SELECT to_jsonb(l)::text AS row FROM audit_log l WHERE conversation_id = $1',
      [c],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows as Array<{ row: string }>) expect(r.row).not.toContain(secret);
    const digest = argsDigest({ name: 'x', data: { secret } });
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.some((r: { row: string }) => r.row.includes(digest))).toBe(true);
  });

  it('are digested from canonical JSON: keys sorted recursively, no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}',
    );
    expect(argsDigest({ b: 1, a: 2 })).toBe(argsDigest({ a: 2, b: 1 }));
  });
});

describe('the chain', () => {
  /** A conversation with five entries, sealed; its seqs. */
  async function chain(): Promise<{ c: string; seqs: number[] }> {
    const c = uniqueId('audit-chain');
    await createConversation(app, owner.token, c);
    for (let i = 0; i < 4; i++) await negotiate(c, { action: 'calculator/add', args: { a: i, b: 1 } }).expect(200);
    const list = await entries(c);
    expect(list).toHaveLength(5);
    return { c, seqs: list.map((e) => e.seq) };
  }

  it('verifies: each hash is SHA-256 of prevHash + the canonical entry without hash, from 64 zeros', async () => {
    const { c } = await chain();
    const list = await entries(c);
    expect(list[0]!.prevHash).toBe(GENESIS_HASH);
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      expect(entryHash(e as never)).toBe(e.hash);
      if (i > 0) expect(e.prevHash).toBe(list[i - 1]!.hash);
    }
    expect(await verify(c)).toEqual({ ok: true, entries: 5, head: list[4]!.hash });
  });

  it('detects a field altered by SQL at that entry', async () => {
    const { c, seqs } = await chain();
    await t.db.pool.query("UPDATE audit_log SET outcome = 'denied' WHERE seq = $1", [seqs[2]]);
    expect(await verify(c)).toEqual({ ok: false, entries: 3, brokenAt: seqs[2] });
  });

  it('detects an altered entry whose hash was recomputed too, at the next one', async () => {
    const { c, seqs } = await chain();
    const list = await entries(c);
    const forged = { ...list[1]!, actor: 'user:mallory' };
    await t.db.pool.query('UPDATE audit_log SET actor = $2, hash = $3 WHERE seq = $1', [
      seqs[1],
      forged.actor,
      entryHash(forged as never),
    ]);
    expect(await verify(c)).toMatchObject({ ok: false, brokenAt: seqs[2] });
  });

  it('detects a deleted row (at the entry after it), and the newest rows removed (at the head)', async () => {
    const { c, seqs } = await chain();
    await t.db.pool.query('DELETE FROM audit_log WHERE seq = $1', [seqs[1]]);
    expect(await verify(c)).toMatchObject({ ok: false, brokenAt: seqs[2] });

    const tail = await chain();
    await t.db.pool.query('DELETE FROM audit_log WHERE seq = $1', [tail.seqs[4]]);
    expect(await verify(tail.c)).toMatchObject({ ok: false, brokenAt: tail.seqs[4] });
  });

  it("detects two rows' seq swapped", async () => {
    const { c, seqs } = await chain();
    const [a, b] = [Number(seqs[1]), Number(seqs[3])];
    // Through a free value: the primary key is checked per statement.
    await t.db.pool.query(
      `BEGIN; UPDATE audit_log SET seq = -1 WHERE seq = ${a}; UPDATE audit_log SET seq = ${a} WHERE seq = ${b};
       UPDATE audit_log SET seq = ${b} WHERE seq = -1; COMMIT`,
    );
    expect(await verify(c)).toMatchObject({ ok: false, brokenAt: seqs[1] });
  });
});

describe('entries outlive their conversation', () => {
  it('admins read and verify them after the deletion; the owner no longer finds it', async () => {
    const c = uniqueId('audit-deleted');
    await createConversation(app, owner.token, c);
    await negotiate(c, { action: 'calculator/add', args: { a: 1, b: 1 } }).expect(200);
    await as(app, owner.token).delete(`/conversations/${c}`).expect(204);
    const list = await entries(c, TEST_ADMIN_TOKEN);
    expect(list.map((e) => e.event)).toEqual(['conversation.created', 'negotiate', 'conversation.deleted']);
    expect(await verify(c)).toMatchObject({ ok: true, entries: 3 });
    expectProblem(await as(app, owner.token).get(`/conversations/${c}/audit`), 404, 'not_found');
  });
});

describe('a write action and its entry', () => {
  it('commits the entry with the writes: one for a success, none of the writes for a failure', async () => {
    const c = uniqueId('audit-atomic');
    await as(app, owner.token).put(`/conversations/${c}/permissions/sandboxed-tool`).send({ level: 2 }).expect(200);

    await negotiate(c, { action: 'sandboxed-tool/write-two', args: { first: 'a', second: 'b' } }, 'rid-ok').expect(200);
    // Committed with the writes: there at once, before any flush or seal.
    expect(await storedRows('rid-ok')).toEqual([expect.objectContaining({ outcome: 'success', event: 'negotiate' })]);

    await negotiate(
      c,
      { action: 'sandboxed-tool/write-two', args: { first: 'c', second: 'd', fail: true } },
      'rid-fail',
    ).expect(500);
    await as(app, owner.token).get(`/conversations/${c}/resources/c`).expect(404);
    const list = await entries(c);
    expect(list.filter((e) => e.requestId === 'rid-ok')).toHaveLength(1);
    // The failed call's writes left nothing; its decision is recorded as its error.
    expect(list.filter((e) => e.requestId === 'rid-fail')).toEqual([
      expect.objectContaining({ outcome: 'tool_error', status: 500 }),
    ]);
    expect(await verify(c)).toMatchObject({ ok: true });
  });
});

describe('queued entries', () => {
  it('of read decisions appear after the flush, without a read of the log', async () => {
    const c = uniqueId('audit-queued');
    await createConversation(app, owner.token, c);
    await negotiate(c, { action: 'calculator/add', args: { a: 1, b: 2 } }, 'rid-queued').expect(200);
    await waitFor('the queued entry', async () => (await storedRows('rid-queued')).length === 1, 10_000);
    // ... and the sealer chains it without being asked.
    await waitFor('the sealed entry', async () => {
      const { rows } = await t.db.pool.query('SELECT 1 FROM audit_log WHERE request_id = $1', ['rid-queued']);
      return rows.length === 1;
    });
  });
});

describe('who reads the log', () => {
  let c: string;
  let agent: MintedKey;
  beforeAll(async () => {
    c = uniqueId('audit-access');
    await createConversation(app, owner.token, c);
    agent = await mintAgentKey(app, owner.token, c);
  });

  it('the owner and admins; another user gets 404, an agent 403 in its conversation', async () => {
    await as(app, owner.token).get(`/conversations/${c}/audit`).expect(200);
    await as(app, TEST_ADMIN_TOKEN).get(`/conversations/${c}/audit/verify`).expect(200);
    expectProblem(await as(app, other.token).get(`/conversations/${c}/audit`), 404, 'not_found');
    expectProblem(await as(app, other.token).get(`/conversations/${c}/audit/verify`), 404, 'not_found');
    expectProblem(await as(app, agent.token).get(`/conversations/${c}/audit`), 403, 'forbidden');
    expectProblem(await as(app, agent.token).get(`/conversations/${c}/audit/verify`), 403, 'forbidden');
    expectProblem(await as(app, agent.token).get(`/conversations/${uniqueId('x')}/audit`), 404, 'not_found');
  });

  it('an id never used is 404 for admins too; bad after or limit is a 400', async () => {
    expectProblem(await as(app, TEST_ADMIN_TOKEN).get(`/conversations/${uniqueId('never')}/audit`), 404, 'not_found');
    for (const q of ['after=-1', 'after=x', 'limit=0', 'limit=501', 'limit=1.5']) {
      expectProblem(await as(app, owner.token).get(`/conversations/${c}/audit?${q}`), 400, 'validation_failed');
    }
  });

  it('pages with after and nextCursor', async () => {
    for (let i = 0; i < 3; i++) await negotiate(c, { action: 'calculator/add', args: { a: i, b: 0 } }).expect(200);
    const first = await as(app, owner.token).get(`/conversations/${c}/audit?limit=2`).expect(200);
    expect(first.body.entries).toHaveLength(2);
    expect(first.body.nextCursor).toBe(first.body.entries[1].seq);
    const rest = await as(app, owner.token)
      .get(`/conversations/${c}/audit?after=${first.body.nextCursor}&limit=500`)
      .expect(200);
    expect(rest.body.nextCursor).toBeNull();
    const all = await entries(c);
    expect([...first.body.entries, ...rest.body.entries]).toEqual(all);
  });
});
