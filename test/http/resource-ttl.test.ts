/**
 * Resource TTL (API.md, "Shared context, M6", TTL) over real HTTP on a real
 * database: `ttlSeconds` on PUT and on data-tool's writes sets `expiresAt`;
 * from that instant the resource is missing to every read and write (REST,
 * negotiate, MCP), a create takes its name over as a new resource, and the
 * sweeper deletes it with event `resource.expired` and an audit entry by
 * `expiry`.
 *
 * Time is the database's: instead of waiting out a TTL, most tests move
 * `expires_at` into the past in the database (with its triggers off, so the
 * move itself records no event). One test waits for a real 1 s TTL, polling.
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type supertest from 'supertest';
import { bearer, request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { serverUrl } from '../support/db-server';
import { SqlEventLog } from '../../src/db/event-log';

const YEAR = 31_536_000;

let t: TestApp;
let server: HttpServer;
let base: string;

beforeAll(async () => {
  t = await createTestApp();
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    if (!server) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
  await t?.close();
});

type Body = Record<string, unknown>;

const url = (c: string, name: string): string => `/conversations/${c}/resources/${name}`;

function put(c: string, name: string, body: Body, headers: Record<string, string> = {}): supertest.Test {
  return request(t.app).put(url(c, name)).set(headers).send(body);
}

function neg(c: string, action: string, args: Body): supertest.Test {
  return request(t.app).post(`/conversations/${c}/negotiate`).send({ action, args });
}

/** Moves the resource's expiry `ms` into the past on the database's clock, recording nothing (triggers off). */
async function expire(c: string, name: string, ms = 1): Promise<void> {
  const client = await t.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    const { rowCount } = await client.query(
      `UPDATE resources SET expires_at = now() - $3::int * interval '1 millisecond'
       WHERE conversation_id = $1 AND name = $2`,
      [c, name, ms],
    );
    await client.query('COMMIT');
    expect(rowCount).toBe(1);
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

async function rowExists(c: string, name: string): Promise<boolean> {
  const { rowCount } = await t.db.pool.query('SELECT 1 FROM resources WHERE conversation_id = $1 AND name = $2', [
    c,
    name,
  ]);
  return rowCount === 1;
}

/** The conversation's resource events, in order (the log seals what is pending first). */
async function resourceEvents(c: string): Promise<Array<{ type: string; name: string; version: number }>> {
  const events = await new SqlEventLog(t.db.pool).poll(0, 100_000);
  return events
    .filter((e) => e.conversationId === c && e.type.startsWith('resource.'))
    .map((e) => {
      const s = e.subject as { name: string; version: number };
      return { type: e.type, name: s.name, version: s.version };
    });
}

async function connectMcp(c: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/conversations/${c}/mcp`), {
    requestInit: { headers: bearer() },
  });
  const client = new Client({ name: 'ttl-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

describe('writing with ttlSeconds', () => {
  it('PUT with ttlSeconds answers expiresAt = the write + ttl; GET shows it; a PUT without clears it', async () => {
    const c = uniqueId('ttl-put');
    const created = await put(c, 'doc', { data: { v: 1 }, ttlSeconds: 3600 }).expect(201);
    expect(created.body.expiresAt).toBe(created.body.updatedAt + 3600 * 1000);
    const read = await request(t.app).get(url(c, 'doc')).expect(200);
    expect(read.body).toEqual(created.body);

    const longest = await put(c, 'doc', { data: { v: 2 }, ttlSeconds: YEAR }).expect(200);
    expect(longest.body).toMatchObject({ version: 2, expiresAt: longest.body.updatedAt + YEAR * 1000 });

    const plain = await put(c, 'doc', { data: { v: 3 } }).expect(200);
    expect(plain.body.version).toBe(3);
    expect('expiresAt' in plain.body).toBe(false);
    expect('expiresAt' in (await request(t.app).get(url(c, 'doc')).expect(200)).body).toBe(false);
  });

  it('refuses a ttlSeconds that is not a whole number from 1 to 31536000: 400, nothing stored', async () => {
    const c = uniqueId('ttl-bad');
    for (const ttlSeconds of [0, -5, YEAR + 1, 1.5, '60', true, null, {}]) {
      const res = await put(c, 'doc', { data: 1, ttlSeconds }).expect(400);
      expect(res.body.code).toBe('validation_failed');
      expect(JSON.stringify(res.body.errors)).toContain('ttlSeconds');
    }
    await request(t.app).get(url(c, 'doc')).expect(404);

    await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    for (const ttlSeconds of [0, YEAR + 1, 2.5, 'soon']) {
      const res = await neg(c, 'create-resource', { name: 'doc', data: 1, ttlSeconds }).expect(400);
      expect(res.body).toMatchObject({ success: false, code: 'invalid_args' });
      expect(res.body.error).toContain('ttlSeconds');
    }
    await request(t.app).get(url(c, 'doc')).expect(404);
  });

  it("data-tool's create-resource and update-resource take ttlSeconds; an update without it clears the expiry", async () => {
    const c = uniqueId('ttl-tool');
    await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    const created = await neg(c, 'create-resource', { name: 'doc', data: 1, ttlSeconds: 60 }).expect(200);
    const r1 = created.body.output.resource;
    expect(r1).toMatchObject({ version: 1, createdBy: 'data-tool', expiresAt: r1.updatedAt + 60_000 });

    const updated = await neg(c, 'update-resource', { name: 'doc', data: 2, ttlSeconds: 120 }).expect(200);
    expect(updated.body.output).toMatchObject({ version: 2, expiresAt: updated.body.output.updatedAt + 120_000 });

    const plain = await neg(c, 'update-resource', { name: 'doc', data: 3 }).expect(200);
    expect(plain.body.output.version).toBe(3);
    expect('expiresAt' in plain.body.output).toBe(false);
    const read = await neg(c, 'read-resource', { name: 'doc' }).expect(200);
    expect(read.body.output).toEqual(plain.body.output);
  });
});

describe('an expired resource', () => {
  it('reads as missing from expiresAt on (a real 1 s TTL, polled)', async () => {
    const c = uniqueId('ttl-real');
    const res = await put(c, 'brief', { data: 'gone soon', ttlSeconds: 1 }).expect(201);
    await waitFor(
      'the resource to expire',
      async () => (await request(t.app).get(url(c, 'brief'))).status === 404,
      10_000,
    );
    // Not before its time, by the database's clock.
    const { rows } = await t.db.pool.query<{ now: Date }>('SELECT now() AS now');
    expect(rows[0]!.now.getTime()).toBeGreaterThanOrEqual(res.body.expiresAt);
  });

  it('is missing to GET, negotiate reads and writes, DELETE, If-Match and MCP resources/read', async () => {
    const c = uniqueId('ttl-missing');
    await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    await put(c, 'doc', { data: { secret: 'old' }, ttlSeconds: 3600 }).expect(201);
    await expire(c, 'doc');

    const get = await request(t.app).get(url(c, 'doc')).expect(404);
    expect(get.body.code).toBe('not_found');
    // read-resource prefetches the resource with the permission check: the prefetch honours expiry too.
    const read = await neg(c, 'read-resource', { name: 'doc' }).expect(404);
    expect(read.body).toMatchObject({ code: 'resource_not_found', error: 'Resource not found: doc' });
    const upd = await neg(c, 'update-resource', { name: 'doc', data: 'new' }).expect(404);
    expect(upd.body.code).toBe('resource_not_found');
    expect((await neg(c, 'delete-resource', { name: 'doc' }).expect(404)).body.code).toBe('resource_not_found');
    await request(t.app).delete(url(c, 'doc')).expect(404);
    const ifMatch = await put(c, 'doc', { data: 'new' }, { 'If-Match': '"1"' }).expect(412);
    expect(ifMatch.body.detail).toBe('Resource not found: doc');
    await put(c, 'doc', { data: 'new' }, { 'If-Match': '*' }).expect(412);

    const client = await connectMcp(c);
    try {
      const failure = await client.readResource({ uri: `context://${c}/doc` }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(McpError);
      expect((failure as McpError).code).toBe(ErrorCode.InvalidParams);
    } finally {
      await client.close();
    }
    // Nothing above touched the row: it waits for the sweeper.
    expect(await rowExists(c, 'doc')).toBe(true);
  });

  it('a create takes the name over as a new resource (version 1): negotiate, If-None-Match: * and a plain PUT', async () => {
    const c = uniqueId('ttl-recreate');
    await request(t.app).put(`/conversations/${c}/permissions/data-tool`).send({ level: 2 }).expect(200);
    await put(c, 'a', { data: 'old' }, {}).expect(201);
    await put(c, 'a', { data: 'old 2', ttlSeconds: 60 }).expect(200);
    await expire(c, 'a');
    const created = await neg(c, 'create-resource', { name: 'a', data: 'new' }).expect(200);
    expect(created.body.output.resource).toMatchObject({ name: 'a', data: 'new', version: 1, createdBy: 'data-tool' });
    expect('expiresAt' in created.body.output.resource).toBe(false);
    // A live one is still refused.
    expect((await neg(c, 'create-resource', { name: 'a', data: 'again' }).expect(409)).body.code).toBe(
      'resource_exists',
    );

    await put(c, 'b', { data: 'old', ttlSeconds: 60 }).expect(201);
    await expire(c, 'b');
    const onlyNew = await put(c, 'b', { data: 'new', ttlSeconds: 30 }, { 'If-None-Match': '*' }).expect(201);
    expect(onlyNew.body).toMatchObject({ version: 1, data: 'new', expiresAt: onlyNew.body.createdAt + 30_000 });

    await put(c, 'd', { data: 'old' }).expect(201);
    await put(c, 'd', { data: 'old', ttlSeconds: 60 }).expect(200);
    await put(c, 'd', { data: 'old', ttlSeconds: 60 }).expect(200);
    await expire(c, 'd');
    // If-None-Match on the dead version passes: a missing resource is at no version.
    const plain = await put(c, 'd', { data: 'new' }, { 'If-None-Match': '"3"' }).expect(201);
    expect(plain.body).toMatchObject({ version: 1, data: 'new', createdBy: 'client' });
    expect(plain.body.createdAt).toBe(plain.body.updatedAt);

    // Each takeover reads as the old one's expiry and a creation, never as an update.
    const events = await resourceEvents(c);
    expect(events.filter((e) => e.name === 'a')).toEqual([
      { type: 'resource.created', name: 'a', version: 1 },
      { type: 'resource.updated', name: 'a', version: 2 },
      { type: 'resource.expired', name: 'a', version: 2 },
      { type: 'resource.created', name: 'a', version: 1 },
    ]);
    expect(events.filter((e) => e.name === 'd').map((e) => e.type)).toEqual([
      'resource.created',
      'resource.updated',
      'resource.updated',
      'resource.expired',
      'resource.created',
    ]);
    // And each is audited as an expiry, as the sweeper's deletions are.
    const audit = await request(t.app).get(`/conversations/${c}/audit`).expect(200);
    const expired = (audit.body.entries as Body[]).filter((e) => e.event === 'resource.expired');
    expect(expired.map((e) => [e.action, e.actor])).toEqual([
      ['a', 'expiry'],
      ['b', 'expiry'],
      ['d', 'expiry'],
    ]);
  });
});

describe('the sweeper', () => {
  // What earlier tests left expired is swept first: every expired row after that is the test's own
  // (other test files have databases of their own).
  beforeEach(() => t.services.expiry.sweepOnce());

  it('deletes expired resources only, each with event resource.expired and an audit entry by expiry', async () => {
    const c = uniqueId('ttl-sweep');
    await put(c, 'old-1', { data: 1, ttlSeconds: 60 }).expect(201);
    await put(c, 'old-2', { data: 2, ttlSeconds: 60 }).expect(201);
    await put(c, 'later', { data: 3, ttlSeconds: 3600 }).expect(201);
    await put(c, 'forever', { data: 4 }).expect(201);
    await expire(c, 'old-1');
    await expire(c, 'old-2', 5000);

    expect(await t.services.expiry.sweepOnce()).toBe(2);
    expect(await rowExists(c, 'old-1')).toBe(false);
    expect(await rowExists(c, 'old-2')).toBe(false);
    await request(t.app).get(url(c, 'later')).expect(200);
    await request(t.app).get(url(c, 'forever')).expect(200);
    expect(await t.services.expiry.sweepOnce()).toBe(0);

    const expired = (await resourceEvents(c)).filter((e) => e.type !== 'resource.created');
    expect(expired.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { type: 'resource.expired', name: 'old-1', version: 1 },
      { type: 'resource.expired', name: 'old-2', version: 1 },
    ]);

    const audit = await request(t.app).get(`/conversations/${c}/audit`).expect(200);
    const entries = (audit.body.entries as Body[]).filter((e) => e.event === 'resource.expired');
    expect(entries.map((e) => e.action).sort()).toEqual(['old-1', 'old-2']);
    for (const e of entries) expect(e).toMatchObject({ actor: 'expiry', outcome: 'success', requestId: 'expiry' });
    expect((await request(t.app).get(`/conversations/${c}/audit/verify`).expect(200)).body.ok).toBe(true);
  });

  // The embedded database serves one session at a time: a held transaction there blocks every other.
  const onServer = serverUrl() ? it : it.skip;
  onServer('a row another transaction holds is skipped, not waited for, and swept next time', async () => {
    const c = uniqueId('ttl-locked');
    await put(c, 'held', { data: 1, ttlSeconds: 60 }).expect(201);
    await expire(c, 'held');
    const holder = await t.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM resources WHERE conversation_id = $1 AND name = $2 FOR UPDATE', [c, 'held']);
      expect(await t.services.expiry.sweepOnce()).toBe(0);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    expect(await t.services.expiry.sweepOnce()).toBe(1);
    expect(await rowExists(c, 'held')).toBe(false);
  });

  it('deleting the conversation takes expired resources along with no resource.expired', async () => {
    const c = uniqueId('ttl-conv');
    await put(c, 'x', { data: 1, ttlSeconds: 60 }).expect(201);
    await expire(c, 'x');
    await request(t.app).delete(`/conversations/${c}`).expect(204);
    expect((await resourceEvents(c)).map((e) => e.type)).toEqual(['resource.created']);
    expect(await t.services.expiry.sweepOnce()).toBe(0);
  });
});
