/**
 * The JWT verifier (src/auth/jwt.ts) against a real JWKS endpoint: a node:http
 * server on a free port serving public keys made with jose, and tokens signed
 * with jose. The clock is jest's fake Date alone (timers stay real), so
 * expiry, not-before and the JWKS refetch cooldown are tested without waiting.
 */
import type * as Jose from 'jose' with { 'resolution-mode': 'import' };
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createJwtVerifier, looksLikeJwt, type JwtConfig, type JwtVerifierOptions } from '../../src/auth/jwt';
import { UnavailableError } from '../../src/core/errors';

const ISSUER = 'https://idp.example/';
const AUDIENCE = 'tool-gateway';
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

interface Signer {
  kid: string;
  alg: string;
  privateKey: Jose.GenerateKeyPairResult['privateKey'];
  jwk: Jose.JWK;
}

let jose: typeof Jose;
let keyA: Signer;
let keyB: Signer;
let keyX: Signer;

/** The JWKS server: what it serves, how it answers, and how often it was asked. */
let server: Server;
let jwksUrl: string;
let served: Jose.JWK[];
let answer: 'keys' | 'error' | 'not-a-key-set' | 'not-json';
let fetches: number;

let serial = 0;
const nowSec = (): number => Math.floor(Date.now() / 1000);

async function makeSigner(kid: string, alg: string): Promise<Signer> {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg);
  return { kid, alg, privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A token valid for this service unless `claims` says otherwise (a claim set to undefined is left out). */
async function token(claims: Record<string, unknown> = {}, signer = keyA): Promise<string> {
  const all = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    iat: nowSec(),
    exp: nowSec() + 600,
    jti: `t${++serial}`,
    ...claims,
  };
  const payload = Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as Jose.JWTPayload;
  return new jose.SignJWT(payload).setProtectedHeader({ alg: signer.alg, kid: signer.kid }).sign(signer.privateKey);
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function verifier(cfg: Partial<JwtConfig> = {}, options?: JwtVerifierOptions) {
  return createJwtVerifier({ jwksUrl, issuer: ISSUER, audience: AUDIENCE, roleClaim: 'role', ...cfg }, options);
}

/** Moves the fake clock on by `sec` seconds. */
const advance = (sec: number): void => jest.setSystemTime(Date.now() + sec * 1000);

beforeAll(async () => {
  jose = await import('jose');
  [keyA, keyB, keyX] = await Promise.all([
    makeSigner('A', 'RS256'),
    makeSigner('B', 'RS256'),
    makeSigner('X', 'RS256'),
  ]);
  server = createServer((_req, res) => {
    fetches++;
    if (answer === 'error') {
      res.writeHead(500).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (answer === 'not-json') res.end('<html>maintenance</html>');
    else res.end(JSON.stringify({ keys: answer === 'not-a-key-set' ? 'none' : served }));
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  served = [keyA.jwk];
  answer = 'keys';
  fetches = 0;
  // Only Date is fake: the HTTP server, fetch and jose's fetch timeout run on real timers.
  jest.useFakeTimers({
    now: T0,
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
});

afterEach(() => {
  jest.useRealTimers();
  jest.restoreAllMocks();
});

describe('looksLikeJwt', () => {
  it('recognises a signed JWT, and the shape of an unsigned one', async () => {
    expect(looksLikeJwt(await token())).toBe(true);
    expect(looksLikeJwt(`${b64url({ alg: 'none' })}.${b64url({ sub: 'alice' })}.`)).toBe(true);
  });

  it.each([
    ['an API key', 'tgw_3q2+7w_Zk9fQ1mXbN4pLr8sVt0uYa6cDe5hGj2kM'],
    ['an empty string', ''],
    ['three parts that are not base64url JSON', 'abc.def.ghi'],
    ['a header without alg', `${b64url({ typ: 'JWT' })}.${b64url({})}.c2ln`],
    ['a header that is not an object', `${b64url('RS256')}.${b64url({})}.c2ln`],
    ['two parts', `${b64url({ alg: 'RS256' })}.${b64url({})}`],
    ['five parts (a JWE)', `${b64url({ alg: 'RSA-OAEP', enc: 'A256GCM' })}.a.b.c.d`],
    ['base64 rather than base64url', `${b64url({ alg: 'RS256' })}.e30=.c2ln`],
    ['whitespace', ` ${b64url({ alg: 'RS256' })}.${b64url({})}.c2ln`],
  ])('refuses %s', (_what, value) => {
    expect(looksLikeJwt(value)).toBe(false);
  });
});

describe('createJwtVerifier', () => {
  it('gives a valid token the user principal of its sub', async () => {
    expect(await verifier().verify(await token())).toStrictEqual({ role: 'user', subject: 'alice' });
  });

  it.each([
    ['admin', 'admin'],
    ['user', 'user'],
    ['Admin', 'user'],
    ['superuser', 'user'],
    ['agent', 'user'],
    [42, 'user'],
    [undefined, 'user'],
    [['viewer', 'admin'], 'admin'],
    [['viewer'], 'user'],
    [{ admin: true }, 'user'],
  ])('takes role %j as %s', async (role, expected) => {
    expect(await verifier().verify(await token({ role }))).toEqual({ role: expected, subject: 'alice' });
  });

  it('reads the role from AUTH_ROLE_CLAIM', async () => {
    const claims = { app_role: 'admin', role: 'user' };
    expect(await verifier({ roleClaim: 'app_role' }).verify(await token(claims))).toEqual({
      role: 'admin',
      subject: 'alice',
    });
    expect((await verifier().verify(await token(claims)))?.role).toBe('user');
  });

  it('checks the audience and the issuer', async () => {
    const v = verifier();
    expect(await v.verify(await token({ aud: 'another-service' }))).toBeUndefined();
    expect(await v.verify(await token({ aud: undefined }))).toBeUndefined();
    expect(await v.verify(await token({ aud: ['another-service', AUDIENCE] }))).toEqual({
      role: 'user',
      subject: 'alice',
    });
    expect(await v.verify(await token({ iss: 'https://evil.example/' }))).toBeUndefined();
    expect(await v.verify(await token({ iss: undefined }))).toBeUndefined();
  });

  it('checks exp and nbf, with a 5 s clock tolerance', async () => {
    const v = verifier();
    expect(await v.verify(await token({ exp: nowSec() - 10 }))).toBeUndefined();
    expect(await v.verify(await token({ exp: nowSec() - 2 }))).toEqual({ role: 'user', subject: 'alice' });
    expect(await v.verify(await token({ nbf: nowSec() + 60 }))).toBeUndefined();
    expect(await v.verify(await token({ nbf: nowSec() + 2 }))).toEqual({ role: 'user', subject: 'alice' });
  });

  it('refuses a token that never expires', async () => {
    expect(await verifier().verify(await token({ exp: undefined }))).toBeUndefined();
  });

  it('refuses a token without a string sub', async () => {
    const v = verifier();
    expect(await v.verify(await token({ sub: undefined }))).toBeUndefined();
    expect(await v.verify(await token({ sub: '' }))).toBeUndefined();
    expect(await v.verify(await token({ sub: 42 }))).toBeUndefined();
  });

  it('refuses HS256 and alg none before fetching any key', async () => {
    const v = verifier();
    const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: nowSec() + 600 };
    const hs256 = await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'A' })
      .sign(new TextEncoder().encode('a shared secret of at least 32 bytes'));
    expect(await v.verify(hs256)).toBeUndefined();
    expect(await v.verify(`${b64url({ alg: 'none' })}.${b64url(claims)}.`)).toBeUndefined();
    expect(await v.verify(`${b64url({ alg: 'none', kid: 'A' })}.${b64url(claims)}.`)).toBeUndefined();
    expect(fetches).toBe(0);
  });

  it('refuses a bad signature: a tampered payload, or another key under a known kid', async () => {
    const v = verifier();
    const [header, , signature] = (await token()).split('.');
    const tampered = `${header}.${b64url({ iss: ISSUER, aud: AUDIENCE, sub: 'root', role: 'admin', exp: nowSec() + 600 })}.${signature}`;
    expect(await v.verify(tampered)).toBeUndefined();
    expect(await v.verify(await token({}, { ...keyX, kid: 'A' }))).toBeUndefined();
  });

  it.each([
    ['garbage', 'garbage'],
    ['an API key', 'tgw_3q2+7w_Zk9fQ1mXbN4pLr8sVt0uYa6cDe5hGj2kM'],
    ['three dots', '...'],
    ['a header that is not JSON', 'abc.def.ghi'],
    ['a payload that is not JSON', `${b64url({ alg: 'RS256', kid: 'A' })}.bm90IGpzb24.c2ln`],
  ])('answers undefined for %s, never throwing', async (_what, value) => {
    await expect(verifier().verify(value)).resolves.toBeUndefined();
  });

  it('refuses an unknown kid, after one refetch of the JWKS per cooldown', async () => {
    const v = verifier();
    expect(await v.verify(await token({}, keyX))).toBeUndefined();
    expect(fetches).toBe(1);
    expect(await v.verify(await token({}, keyX))).toBeUndefined();
    expect(fetches).toBe(1); // within the cooldown: no refetch
    advance(6);
    expect(await v.verify(await token({}, keyX))).toBeUndefined();
    expect(fetches).toBe(2);
  });

  it('keeps the keys it fetched, and picks up a rotated key on its unknown kid', async () => {
    const v = verifier();
    expect(await v.verify(await token({ sub: 'alice' }))).toEqual({ role: 'user', subject: 'alice' });
    expect(await v.verify(await token({ sub: 'bob' }))).toEqual({ role: 'user', subject: 'bob' });
    expect(fetches).toBe(1);

    served = [keyB.jwk]; // the provider rotates from A to B
    const signedByB = await token({ sub: 'carol' }, keyB);
    // jose refetches an unknown kid at most once per cooldown (5 s): right after a fetch, B is not known yet.
    expect(await v.verify(signedByB)).toBeUndefined();
    expect(fetches).toBe(1);
    advance(6);
    expect(await v.verify(signedByB)).toEqual({ role: 'user', subject: 'carol' });
    expect(fetches).toBe(2);
    expect(await v.verify(await token({ sub: 'dave' }, keyB))).toEqual({ role: 'user', subject: 'dave' });
    expect(fetches).toBe(2);
  });

  it('throws UnavailableError when the JWKS cannot be fetched', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => closed.once('listening', resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/jwks`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(verifier({ jwksUrl: closedUrl }).verify(await token())).rejects.toBeInstanceOf(UnavailableError);

    for (const mode of ['error', 'not-a-key-set', 'not-json'] as const) {
      answer = mode;
      const err: unknown = await verifier()
        .verify(await token())
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnavailableError);
      expect((err as Error).message).toMatch(/AUTH_JWKS_URL/);
    }
  });

  it('verifies known kids from the keys it has while the JWKS is down, and cannot tell about an unknown one', async () => {
    const v = verifier();
    expect(await v.verify(await token())).toEqual({ role: 'user', subject: 'alice' });
    answer = 'error';
    advance(6);
    expect(await v.verify(await token({ sub: 'bob' }))).toEqual({ role: 'user', subject: 'bob' });
    await expect(v.verify(await token({}, keyB))).rejects.toBeInstanceOf(UnavailableError);
    expect(fetches).toBe(2);
  });

  it('verifies a token seen before without a signature check or a fetch', async () => {
    const v = verifier();
    const t = await token({ role: 'admin' });
    const first = await v.verify(t);
    expect(first).toEqual({ role: 'admin', subject: 'alice' });
    first!.role = 'user'; // what a caller does with its principal is not the cache's

    const signatureChecks = jest.spyOn(crypto.subtle, 'verify');
    expect(await v.verify(t)).toEqual({ role: 'admin', subject: 'alice' });
    expect(signatureChecks).not.toHaveBeenCalled();
    expect(fetches).toBe(1);

    expect(await v.verify(await token({ role: 'admin' }))).toEqual({ role: 'admin', subject: 'alice' });
    expect(signatureChecks).toHaveBeenCalledTimes(1); // a new token is checked
  });

  it('refuses a cached token once it has expired', async () => {
    const v = verifier();
    const t = await token({ exp: nowSec() + 60 });
    expect(await v.verify(t)).toEqual({ role: 'user', subject: 'alice' });
    advance(59);
    expect(await v.verify(t)).toEqual({ role: 'user', subject: 'alice' });
    advance(7); // past exp and the clock tolerance
    expect(await v.verify(t)).toBeUndefined();
  });

  it('uses a cached token only from its nbf on', async () => {
    const v = verifier();
    const t = await token({ nbf: nowSec() + 3 }); // accepted now, within the clock tolerance
    expect(await v.verify(t)).toEqual({ role: 'user', subject: 'alice' });
    const signatureChecks = jest.spyOn(crypto.subtle, 'verify');
    expect(await v.verify(t)).toEqual({ role: 'user', subject: 'alice' });
    expect(signatureChecks).toHaveBeenCalledTimes(1);
    advance(3);
    expect(await v.verify(t)).toEqual({ role: 'user', subject: 'alice' });
    expect(signatureChecks).toHaveBeenCalledTimes(1);
  });

  it('remembers at most cacheMaxEntries tokens, dropping the least recently used', async () => {
    const v = verifier({}, { cacheMaxEntries: 2 });
    const [t1, t2, t3] = await Promise.all([token(), token(), token()]);
    for (const t of [t1, t2, t1, t3]) await v.verify(t); // t1 used after t2: t2 goes when t3 comes
    const signatureChecks = jest.spyOn(crypto.subtle, 'verify');
    await v.verify(t1);
    await v.verify(t3);
    expect(signatureChecks).not.toHaveBeenCalled();
    await v.verify(t2);
    expect(signatureChecks).toHaveBeenCalledTimes(1);
  });
});
