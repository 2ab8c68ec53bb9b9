/**
 * Keys (API.md, Identity and access), over real HTTP on the real app: minting
 * (the token shown once, never listed), who lists which keys, revocation (at
 * once on the app that revoked, within 5 s on another replica of the same
 * database), expiry, GET /me for each kind of key, the shape of every 401,
 * and the bootstrap admin key written to DATA_DIR/admin.key (never over an
 * existing one: it may be another database's only admin token). Expiry times
 * a timestamp cannot hold are 400s, not 500s; a user may not take the
 * built-in admin's subject; deleting a conversation refuses its agent keys at
 * once; only bearer credentials earn error="invalid_token".
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { Server } from 'node:http';
import pino from 'pino';
import { TEST_ADMIN_TOKEN, anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type MintedKey,
  createConversation,
  expectProblem,
  expectUnauthorized,
  listen,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type LogLine, type TestApp, createTestApp } from '../support/test-app';
import { bootstrapAdminKey } from '../../src/auth/bootstrap-admin';

let t: TestApp;
let server: Server | undefined;
let app: string;

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base: app } = await listen(t.app));
});

afterAll(async () => {
  await stopListening(server);
  await t?.close();
});

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

type KeyRow = Record<string, unknown> & { id: string };

async function listedKeys(token: string): Promise<KeyRow[]> {
  const res = await request(app, token).get('/keys').expect(200);
  return res.body.keys as KeyRow[];
}

describe('POST /keys and GET /keys', () => {
  it('mints a key (201) whose token is shown once, and never lists the token or its hash', async () => {
    const before = Date.now();
    const res = await request(app).post('/keys').send({ role: 'user', subject: 'erin', label: 'laptop' });
    expect(res.status).toBe(201);
    const key = res.body as MintedKey & Record<string, unknown>;
    expect(key).toEqual(
      expect.objectContaining({
        id: expect.any(String),
        token: expect.any(String),
        role: 'user',
        subject: 'erin',
        label: 'laptop',
        expiresAt: null,
        createdAt: expect.any(Number),
      }),
    );
    expect(key.createdAt as number).toBeGreaterThanOrEqual(before - 1000);
    expect(key.token.length).toBeGreaterThanOrEqual(32);
    // The token works: it is erin.
    expect((await request(app, key.token).get('/me').expect(200)).body).toEqual({
      subject: 'erin',
      role: 'user',
      keyId: key.id,
    });

    const listed = await listedKeys(TEST_ADMIN_TOKEN);
    const row = listed.find((k) => k.id === key.id);
    expect(row).toEqual(expect.objectContaining({ id: key.id, role: 'user', subject: 'erin', label: 'laptop' }));
    const text = JSON.stringify(listed);
    expect(text).not.toContain(key.token);
    expect(text).not.toContain(sha256(key.token));
    for (const k of listed) {
      expect(Object.keys(k).filter((name) => /token|hash|secret/i.test(name))).toEqual([]);
    }
    // Nor the single key's view after creation: the token is in the 201 only.
    const again = await request(app).post('/keys').send({ role: 'user', subject: 'erin' }).expect(201);
    expect(again.body.token).not.toBe(key.token);
  });

  it('mints an admin key that is an admin', async () => {
    const root = await mintKey(app, 'admin', 'root');
    expect((await request(app, root.token).get('/me').expect(200)).body).toEqual({
      subject: 'root',
      role: 'admin',
      keyId: root.id,
    });
    await request(app, root.token).post('/keys').send({ role: 'user', subject: 'minted-by-root' }).expect(201);
  });

  it.each([
    ['an unknown role', { role: 'agent', subject: 'x' }],
    ['no subject', { role: 'user' }],
    ['an empty subject', { role: 'user', subject: '' }],
    ['expiresAt in the past', { role: 'user', subject: 'x', expiresAt: Date.now() - 1000 }],
    ['expiresAt that is not a number', { role: 'user', subject: 'x', expiresAt: 'tomorrow' }],
  ])('POST /keys with %s → 400', async (_what, body) => {
    const res = await request(app).post('/keys').send(body);
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.token).toBeUndefined();
  });

  it('POST agent-keys with expiresAt in the past → 400', async () => {
    const alice = await mintKey(app, 'user', 'alice');
    const id = uniqueId('past');
    await createConversation(app, alice.token, id);
    const res = await request(app, alice.token)
      .post(`/conversations/${id}/agent-keys`)
      .send({ expiresAt: Date.now() - 1 });
    expectProblem(res, 400, 'validation_failed');
  });

  it.each([9000000000000000, 8640000000000001, 1e20, 1.5, Date.now() - 1000])(
    'expiresAt %p is a 400, on both kinds of key',
    async (expiresAt) => {
      const a = await request(t.app)
        .post('/keys')
        .send({ role: 'user', subject: uniqueId('u'), expiresAt });
      expect([a.status, a.body.code]).toEqual([400, 'validation_failed']);
      const id = uniqueId('conv');
      await request(t.app).post('/conversations').send({ id }).expect(201);
      const b = await request(t.app).post(`/conversations/${id}/agent-keys`).send({ expiresAt });
      expect([b.status, b.body.code]).toEqual([400, 'validation_failed']);
    },
  );

  it("refuses a user named like the built-in admin (it would own the admin's conversations)", async () => {
    const res = await request(t.app).post('/keys').send({ role: 'user', subject: 'admin' });
    expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
    expect(res.body.detail).toContain('built-in admin');
    await request(t.app).post('/keys').send({ role: 'admin', subject: 'admin' }).expect(201);
  });

  it("a user's GET /keys lists exactly the agent keys of its conversations", async () => {
    const frank = await mintKey(app, 'user', 'frank');
    const gina = await mintKey(app, 'user', 'gina');
    const f1 = uniqueId('frank');
    const f2 = uniqueId('frank');
    const g1 = uniqueId('gina');
    await createConversation(app, frank.token, f1);
    await createConversation(app, frank.token, f2);
    await createConversation(app, gina.token, g1);
    const mine = [
      await mintAgentKey(app, frank.token, f1, { label: 'one' }),
      await mintAgentKey(app, frank.token, f1, { maxLevel: 1 }),
      // An admin's agent key in frank's conversation is one frank manages too.
      await mintAgentKey(app, TEST_ADMIN_TOKEN, f2),
    ];
    const gina1 = await mintAgentKey(app, gina.token, g1);

    const franks = await listedKeys(frank.token);
    expect(franks.map((k) => k.id).sort()).toEqual(mine.map((k) => k.id).sort());
    for (const k of franks) {
      expect(k).toEqual(expect.objectContaining({ role: 'agent' }));
      expect(k).not.toHaveProperty('token');
    }
    expect(franks.find((k) => k.id === mine[1]!.id)).toEqual(
      expect.objectContaining({ conversationId: f1, maxLevel: 1 }),
    );
    expect((await listedKeys(gina.token)).map((k) => k.id)).toEqual([gina1.id]);
    // The admin sees all of them, and the user keys.
    const all = (await listedKeys(TEST_ADMIN_TOKEN)).map((k) => k.id);
    expect(all).toEqual(expect.arrayContaining([...mine.map((k) => k.id), gina1.id, frank.id, gina.id]));
    // Gina cannot revoke frank's agent key: to her it does not exist.
    expectProblem(await request(app, gina.token).delete(`/keys/${mine[0]!.id}`), 404, 'not_found');
    await request(app, mine[0]!.token).get('/me').expect(200);
    // Nor her own user key, nor an admin's.
    expectProblem(await request(app, gina.token).delete(`/keys/${gina.id}`), 404, 'not_found');
  });
});

describe('revocation', () => {
  it('DELETE /keys/{id} → 204, and the token gets 401 at once on this app', async () => {
    const key = await mintKey(app, 'user', 'hank');
    await request(app, key.token).get('/me').expect(200);
    await request(app).delete(`/keys/${key.id}`).expect(204);
    expectUnauthorized(await request(app, key.token).get('/me'));
    expectUnauthorized(await request(app, key.token).get('/tools'));
    // Listed as revoked; revoking again is harmless.
    const row = (await listedKeys(TEST_ADMIN_TOKEN)).find((k) => k.id === key.id);
    expect(typeof row?.revokedAt).toBe('number');
    await request(app).delete(`/keys/${key.id}`).expect(204);
    expectProblem(await request(app).delete('/keys/key_doesnotexist'), 404, 'not_found');
  });

  it("the owner revokes its agent's key", async () => {
    const ivy = await mintKey(app, 'user', 'ivy');
    const id = uniqueId('ivy');
    await createConversation(app, ivy.token, id);
    const agent = await mintAgentKey(app, ivy.token, id);
    const run = { action: 'example-tool/greet', args: {} };
    expect((await request(app, agent.token).post(`/conversations/${id}/negotiate`).send(run)).status).toBe(200);
    await request(app, ivy.token).delete(`/keys/${agent.id}`).expect(204);
    expectUnauthorized(await request(app, agent.token).post(`/conversations/${id}/negotiate`).send(run));
  });

  it('a key revoked on one replica is refused by another within 5 s after it was accepted there', async () => {
    const replica = await createTestApp({}, { replicaOf: t });
    const other = await listen(replica.app);
    try {
      const key = await mintKey(app, 'user', 'jack');
      // The replica accepts it (and now holds it in its cache).
      await request(other.base, key.token).get('/me').expect(200);
      await request(other.base, key.token).get('/me').expect(200);
      await request(app).delete(`/keys/${key.id}`).expect(204);
      const revoked = Date.now();
      expectUnauthorized(await request(app, key.token).get('/me'));
      await waitFor(
        'the replica to refuse the revoked key',
        async () => (await request(other.base, key.token).get('/me')).status === 401,
        5000,
      );
      expect(Date.now() - revoked).toBeLessThanOrEqual(5000);
      expectUnauthorized(await request(other.base, key.token).get('/me'));
    } finally {
      await stopListening(other.server);
      await replica.close();
    }
  });

  it('deleting a conversation refuses its agent keys at once, before a new one with its id could be entered', async () => {
    const owner = await mintKey(t.app, 'user', uniqueId('owner'));
    const id = uniqueId('conv');
    await request(t.app, owner.token).post('/conversations').send({ id }).expect(201);
    const agent = await mintAgentKey(t.app, owner.token, id);
    await request(t.app, agent.token).get('/me').expect(200);
    await request(t.app, owner.token).delete(`/conversations/${id}`).expect(204);
    await request(t.app, agent.token).get('/me').expect(401);
    await request(t.app, owner.token).post('/conversations').send({ id }).expect(201);
    await request(t.app, agent.token).post(`/conversations/${id}/negotiate`).send({ action: 'greet' }).expect(401);
  });
});

describe('expiry', () => {
  it('a key works until its expiresAt and gets 401 once it has passed, on every replica', async () => {
    const replica = await createTestApp({}, { replicaOf: t });
    const other = await listen(replica.app);
    try {
      const expiresAt = Date.now() + 1500;
      const key = await mintKey(app, 'user', 'kate', { expiresAt });
      expect(key).toEqual(expect.objectContaining({ expiresAt }));
      await request(app, key.token).get('/me').expect(200);
      await request(other.base, key.token).get('/me').expect(200);
      await waitFor(
        'the key to expire',
        async () => (await request(app, key.token).get('/me')).status === 401,
        expiresAt + 3000 - Date.now(),
      );
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
      expectUnauthorized(await request(app, key.token).get('/me'));
      expectUnauthorized(await request(other.base, key.token).get('/me'));
    } finally {
      await stopListening(other.server);
      await replica.close();
    }
  });

  it('an agent key with expiresAt expires too', async () => {
    const lena = await mintKey(app, 'user', 'lena');
    const id = uniqueId('lena');
    await createConversation(app, lena.token, id);
    const expiresAt = Date.now() + 1500;
    const agent = await mintAgentKey(app, lena.token, id, { expiresAt });
    expect(agent).toEqual(expect.objectContaining({ expiresAt }));
    await request(app, agent.token).get('/me').expect(200);
    await waitFor(
      'the agent key to expire',
      async () => (await request(app, agent.token).get('/me')).status === 401,
      expiresAt + 3000 - Date.now(),
    );
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
  });
});

describe('GET /me', () => {
  it('describes each kind of principal', async () => {
    expect((await request(app, TEST_ADMIN_TOKEN).get('/me').expect(200)).body).toEqual(
      expect.objectContaining({ role: 'admin', subject: 'admin' }),
    );
    const user = await mintKey(app, 'user', 'mona');
    expect((await request(app, user.token).get('/me').expect(200)).body).toEqual({
      subject: 'mona',
      role: 'user',
      keyId: user.id,
    });
    const id = uniqueId('mona');
    await createConversation(app, user.token, id);
    const agent = await mintAgentKey(app, user.token, id, { maxLevel: 2 });
    expect((await request(app, agent.token).get('/me').expect(200)).body).toEqual({
      subject: 'mona',
      role: 'agent',
      keyId: agent.id,
      conversationId: id,
      maxLevel: 2,
    });
  });
});

describe('401', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a garbage token', 'Bearer not-a-token'],
    ['a well-formed token nobody minted', `Bearer tgw_${'A'.repeat(43)}`],
    ['another scheme', `Basic ${Buffer.from('admin:admin').toString('base64')}`],
    ['an empty bearer', 'Bearer '],
    ['the admin token in the wrong case', `Bearer ${TEST_ADMIN_TOKEN.toUpperCase()}`],
  ])('%s → 401 unauthorized with WWW-Authenticate: Bearer', async (_what, header) => {
    for (const path of ['/me', '/tools', '/tools/graph', '/conversations', '/keys']) {
      const req = anonymous(app).get(path);
      const res = await (header === undefined ? req : req.set('Authorization', header));
      expectUnauthorized(res);
    }
  });

  it('a revoked and an expired key → 401 unauthorized with WWW-Authenticate: Bearer', async () => {
    const revoked = await mintKey(app, 'user', 'nina');
    await request(app).delete(`/keys/${revoked.id}`).expect(204);
    const expiresAt = Date.now() + 300;
    const expired = await mintKey(app, 'user', 'otto', { expiresAt });
    await waitFor('the key to expire', () => Date.now() > expiresAt, 5000);
    for (const key of [revoked, expired]) {
      const res = await request(app, key.token).get('/me');
      expectUnauthorized(res);
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    }
  });

  it('answers error="invalid_token" only to bearer credentials', async () => {
    const basic = await anonymous(t.app).get('/me').set('Authorization', 'Basic dXNlcjpwYXNz');
    expect(basic.status).toBe(401);
    expect(basic.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(basic.headers['www-authenticate']).not.toContain('invalid_token');
    const bad = await anonymous(t.app).get('/me').set('Authorization', 'Bearer tgw_nope');
    expect(bad.headers['www-authenticate']).toContain('error="invalid_token"');
    const none = await anonymous(t.app).get('/me');
    expect(none.headers['www-authenticate']).not.toContain('invalid_token');
  });

  it('the public paths need no token', async () => {
    for (const path of ['/healthz', '/readyz', '/openapi.json']) {
      await anonymous(app).get(path).expect(200);
    }
  });
});

describe('the bootstrap admin key', () => {
  let fresh: TestApp | undefined;
  let dataDir: ScratchDir;
  afterAll(async () => {
    await fresh?.close();
    dataDir?.remove();
  });

  it('ADMIN_API_KEY is an admin', async () => {
    expect((await request(app, TEST_ADMIN_TOKEN).get('/me').expect(200)).body).toEqual(
      expect.objectContaining({ role: 'admin' }),
    );
    await request(app, TEST_ADMIN_TOKEN).post('/keys').send({ role: 'admin', subject: 'second' }).expect(201);
  });

  it('without ADMIN_API_KEY and no admin key: DATA_DIR/admin.key (0600) holds a working admin token; once', async () => {
    fresh = await createTestApp();
    dataDir = scratchDir('admin-key');
    const lines: LogLine[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });

    const file = await bootstrapAdminKey(
      fresh.services.stores.keys,
      { adminApiKey: undefined, dataDir: dataDir.path },
      logger,
    );
    expect(file).toBe(dataDir.file('admin.key'));
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const token = readFileSync(file!, 'utf8').trim();
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(readdirSync(dataDir.path)).toEqual(['admin.key']);

    // It works through the app: an admin that may mint keys.
    const me = await request(fresh.app, token).get('/me').expect(200);
    expect(me.body).toEqual(expect.objectContaining({ role: 'admin' }));
    await request(fresh.app, token).post('/keys').send({ role: 'user', subject: 'pat' }).expect(201);

    // The log names the file, never the token.
    const logged = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(logged).toContain(file!);
    expect(logged).not.toContain(token);
    expect(logged).not.toContain(sha256(token));

    // A second start creates nothing: the file is unchanged, no other file appears.
    const second = await bootstrapAdminKey(
      fresh.services.stores.keys,
      { adminApiKey: undefined, dataDir: dataDir.path },
      logger,
    );
    expect(second).toBeUndefined();
    expect(readFileSync(file!, 'utf8').trim()).toBe(token);
    expect(readdirSync(dataDir.path)).toEqual(['admin.key']);
    const listed = await request(fresh.app, token).get('/keys').expect(200);
    expect((listed.body.keys as { role: string }[]).filter((k) => k.role === 'admin')).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it('with ADMIN_API_KEY set, nothing is written', async () => {
    const dir = scratchDir('admin-key-env');
    try {
      const logger = pino({ level: 'silent' });
      const file = await bootstrapAdminKey(
        t.services.stores.keys,
        { adminApiKey: TEST_ADMIN_TOKEN, dataDir: dir.path },
        logger,
      );
      expect(file).toBeUndefined();
      expect(readdirSync(dir.path)).toEqual([]);
    } finally {
      dir.remove();
    }
  });

  describe('a second first admin', () => {
    // Its own database: the shared one already holds admin keys, and a first admin is minted only where none exists.
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp();
    });

    afterAll(async () => {
      await t?.close();
    });

    it('never overwrites an existing admin.key: a second first admin goes to admin-2.key', async () => {
      const dir = scratchDir('admin-key-twice', { 'admin.key': 'another database admin token\n' });
      try {
        const logger = pino({ level: 'silent' });
        const file = await bootstrapAdminKey(
          t.services.stores.keys,
          { adminApiKey: undefined, dataDir: dir.path },
          logger,
        );
        expect(file).toBe(dir.file('admin-2.key'));
        expect(readFileSync(dir.file('admin.key'), 'utf8')).toBe('another database admin token\n');
        expect(readdirSync(dir.path).sort()).toEqual(['admin-2.key', 'admin.key']);
        const token = readFileSync(file!, 'utf8').trim();
        expect((await request(t.app, token).get('/me').expect(200)).body.role).toBe('admin');
      } finally {
        dir.remove();
      }
    });
  });
});
