/**
 * JWTs from an identity provider (API.md, Identity and access) over HTTP on
 * the real app: a JWKS server (node:http on a free port, keys made with
 * jose) and an app configured with AUTH_JWKS_URL, AUTH_ISSUER and
 * AUTH_AUDIENCE. A user JWT owns what it creates (by `sub`), the role claim
 * makes an admin, a wrong audience, an expired token and an unknown kid are
 * 401, and a key the provider rotates in is picked up after the verifier's
 * refetch cooldown. That cooldown is passed with jest's fake Date alone
 * (every timer stays real), never by waiting.
 */
import type * as Jose from 'jose' with { 'resolution-mode': 'import' };
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { expectProblem, expectUnauthorized, mintKey } from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';

const ISSUER = 'https://idp.example/';
const AUDIENCE = 'tool-gateway';

interface Signer {
  kid: string;
  privateKey: Jose.GenerateKeyPairResult['privateKey'];
  jwk: Jose.JWK;
}

let jose: typeof Jose;
let keyA: Signer;
let keyB: Signer;
let served: Jose.JWK[];
/** How often the JWKS was fetched. */
let fetches = 0;
let jwks: Server;
let t: TestApp;

async function signer(kid: string): Promise<Signer> {
  const { publicKey, privateKey } = await jose.generateKeyPair('ES256');
  return { kid, privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

const nowSec = (): number => Math.floor(Date.now() / 1000);

async function jwt(claims: Record<string, unknown> = {}, key: Signer = keyA): Promise<string> {
  const payload = Object.fromEntries(
    Object.entries({ iss: ISSUER, aud: AUDIENCE, sub: 'carol', iat: nowSec(), exp: nowSec() + 600, ...claims }).filter(
      ([, v]) => v !== undefined,
    ),
  ) as Jose.JWTPayload;
  return new jose.SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: key.kid }).sign(key.privateKey);
}

beforeAll(async () => {
  jose = await import('jose');
  [keyA, keyB] = await Promise.all([signer('key-a'), signer('key-b')]);
  served = [keyA.jwk];
  jwks = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: served }));
  });
  jwks.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => jwks.once('listening', resolve));
  t = await createTestApp({
    AUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: AUDIENCE,
  });
});

afterAll(async () => {
  jest.useRealTimers();
  await t?.close();
  jwks?.closeAllConnections();
  await new Promise<void>((resolve) => (jwks ? jwks.close(() => resolve()) : resolve()));
});

describe('a user JWT', () => {
  it('is the user named by sub: what it creates is owned by sub', async () => {
    const token = await jwt();
    expect((await request(t.app, token).get('/me').expect(200)).body).toEqual({ subject: 'carol', role: 'user' });
    const id = uniqueId('jwt');
    const created = await request(t.app, token).post('/conversations').send({ id }).expect(201);
    expect(created.body.owner).toBe('carol');
    // negotiate on an unknown id too, and the permission history names it.
    const other = uniqueId('jwt-negotiate');
    const up = await request(t.app, token)
      .post(`/conversations/${other}/negotiate`)
      .send({ action: 'upgrade:data-tool:level-2' });
    expect(up.status).toBe(200);
    expect((await request(t.app).get(`/conversations/${other}`).expect(200)).body.owner).toBe('carol');
    const history = await request(t.app, token).get(`/conversations/${other}/permissions/history`).expect(200);
    expect(history.body.events).toEqual([expect.objectContaining({ tool: 'data-tool', actor: 'user:carol' })]);

    // An API key for the same subject is the same owner; another user's JWT is not.
    const carolKey = await mintKey(t.app, 'user', 'carol');
    await request(t.app, carolKey.token).get(`/conversations/${id}`).expect(200);
    const dave = await jwt({ sub: 'dave' });
    expectProblem(await request(t.app, dave).get(`/conversations/${id}`), 404, 'not_found');
    const list = await request(t.app, dave).get('/conversations').expect(200);
    expect(list.body.conversations).toEqual([]);
    // A user JWT mints no keys.
    expectProblem(await request(t.app, token).post('/keys').send({ role: 'user', subject: 'x' }), 403, 'forbidden');
  });

  it('with the role claim admin is an admin', async () => {
    const admin = await jwt({ sub: 'ops', role: 'admin' });
    expect((await request(t.app, admin).get('/me').expect(200)).body).toEqual({ subject: 'ops', role: 'admin' });
    const id = uniqueId('carols');
    await request(t.app, await jwt())
      .post('/conversations')
      .send({ id })
      .expect(201);
    expect((await request(t.app, admin).get(`/conversations/${id}`).expect(200)).body.owner).toBe('carol');
    await request(t.app, admin).post('/keys').send({ role: 'user', subject: 'erin' }).expect(201);
    // Any other value is a user.
    const user = await jwt({ sub: 'eve', role: 'superuser' });
    expect((await request(t.app, user).get('/me').expect(200)).body).toEqual({ subject: 'eve', role: 'user' });
  });

  it.each([
    ['a wrong audience', { aud: 'another-service' }],
    ['a wrong issuer', { iss: 'https://evil.example/' }],
    ['an expired token', { exp: nowSecAtCall(-120), iat: nowSecAtCall(-720) }],
    ['a token not valid yet', { nbf: nowSecAtCall(600) }],
    ['no sub', { sub: undefined }],
  ])('with %s → 401', async (_what, claims) => {
    const token = await jwt(resolve(claims));
    expectUnauthorized(await request(t.app, token).get('/me'));
    expectUnauthorized(await request(t.app, token).post('/conversations').send({}));
  });

  it('signed by a key the provider does not publish → 401', async () => {
    const { privateKey } = await jose.generateKeyPair('ES256');
    const forged = await new jose.SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'carol', exp: nowSec() + 600 })
      .setProtectedHeader({ alg: 'ES256', kid: keyA.kid })
      .sign(privateKey);
    expectUnauthorized(await request(t.app, forged).get('/me'));
    // alg none
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: 'carol', exp: nowSec() + 600 }),
    ).toString('base64url')}.`;
    expectUnauthorized(await request(t.app, unsigned).get('/me'));
  });

  it('the MCP metadata names the issuer as authorization server', async () => {
    const id = uniqueId('jwt-mcp');
    const res = await anonymous(t.app).get(`/.well-known/oauth-protected-resource/conversations/${id}/mcp`).expect(200);
    expect(res.body).toEqual(
      expect.objectContaining({ authorization_servers: [ISSUER], bearer_methods_supported: ['header'] }),
    );
    expect(res.body.resource).toMatch(new RegExp(`^http://[^/]+/conversations/${id}/mcp$`));
  });
});

describe('key rotation', () => {
  afterEach(() => jest.useRealTimers());

  it('an unknown kid is 401 until the provider publishes it and the refetch cooldown has passed', async () => {
    // Only Date is fake: the servers, fetch and every timer stay real.
    jest.useFakeTimers({
      now: Date.now(),
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    await request(t.app, await jwt({ jti: 'warm' }))
      .get('/me')
      .expect(200);
    // Past any earlier fetch's cooldown: the unknown kid refetches the key set, which lacks it yet.
    jest.setSystemTime(Date.now() + 6000);
    const rotated = await jwt({ sub: 'rotated' }, keyB);
    const before = fetches;
    expectUnauthorized(await request(t.app, rotated).get('/me'));
    expect(fetches).toBe(before + 1);
    // The provider rotates key B in; within the 5 s cooldown the verifier does not ask again.
    served = [keyA.jwk, keyB.jwk];
    expectUnauthorized(await request(t.app, rotated).get('/me'));
    expect(fetches).toBe(before + 1);
    // After the cooldown the unknown kid refetches the key set: accepted.
    jest.setSystemTime(Date.now() + 6000);
    expect((await request(t.app, rotated).get('/me').expect(200)).body).toEqual({ subject: 'rotated', role: 'user' });
    expect(fetches).toBe(before + 2);
    // Key A still works.
    await request(t.app, await jwt({ jti: 'after' }))
      .get('/me')
      .expect(200);
  });
});

/** Claims whose times are computed when the test runs, not when the table is built. */
type Claims = Record<string, unknown>;
function nowSecAtCall(offset: number): { at: number } {
  return { at: offset };
}
function resolve(claims: Claims): Claims {
  return Object.fromEntries(
    Object.entries(claims).map(([k, v]) =>
      typeof v === 'object' && v !== null && 'at' in v ? [k, nowSec() + (v as { at: number }).at] : [k, v],
    ),
  );
}
