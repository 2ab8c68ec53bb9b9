/**
 * Limits and Host names (API.md, Identity and access) over real HTTP on the
 * real app: RATE_LIMIT_PER_MINUTE requests per principal, then 429
 * rate_limited with Retry-After and the RateLimit headers, other principals
 * unaffected; the same number of failed authentications per client address
 * (chosen with X-Forwarded-For: the app trusts proxies); and an app that
 * listens on loopback refusing a foreign Host (DNS rebinding).
 */
import type supertest from 'supertest';
import { TEST_ADMIN_TOKEN, anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { expectProblem, expectUnauthorized } from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';
import { ENV_ADMIN } from '../../src/auth/authenticator';

const LIMIT = 5;

describe('RATE_LIMIT_PER_MINUTE', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  });
  afterAll(async () => t?.close());

  /** A user key minted in-process, so that minting spends no principal's budget. */
  async function userToken(subject: string): Promise<string> {
    return (await t.services.keys.mint(ENV_ADMIN, { role: 'user', subject })).token;
  }

  function expectRateLimited(res: supertest.Response): void {
    expectProblem(res, 429, 'rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(res.headers['ratelimit-remaining']).toBe('0');
    expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
  }

  it('the sixth request of one principal → 429 rate_limited; another principal is unaffected', async () => {
    const erin = await userToken('erin');
    const fred = await userToken('fred');
    for (let i = 1; i <= LIMIT; i++) {
      // Any endpoint counts: the budget is the principal's.
      const res = await request(t.app, erin).get(i % 2 === 0 ? '/me' : '/tools');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - i));
      expect(res.headers['ratelimit-reset']).toBeDefined();
    }
    expectRateLimited(await request(t.app, erin).get('/me'));
    expectRateLimited(
      await request(t.app, erin)
        .post(`/conversations/${uniqueId('rl')}/negotiate`)
        .send({ action: 'list-tools' }),
    );
    // fred, from the same address, and the admin, are not affected.
    const other = await request(t.app, fred).get('/me');
    expect(other.status).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    await request(t.app, TEST_ADMIN_TOKEN).get('/me').expect(200);
    // The public probes are not limited.
    for (let i = 0; i < LIMIT + 1; i++) await anonymous(t.app).get('/healthz').expect(200);
  });

  it('the sixth failed authentication from one address → 429; another address still gets 401', async () => {
    const from = (address: string, token: string | undefined): supertest.Test => {
      const req = anonymous(t.app).get('/me').set('X-Forwarded-For', address);
      return token === undefined ? req : req.set('Authorization', `Bearer ${token}`);
    };
    const guesses = ['wrong-1', undefined, `tgw_${'B'.repeat(43)}`, 'wrong-2', 'wrong-3'];
    for (const guess of guesses) expectUnauthorized(await from('203.0.113.7', guess));
    expectRateLimited(await from('203.0.113.7', 'wrong-6'));
    expectRateLimited(await from('203.0.113.7', undefined));
    expectUnauthorized(await from('203.0.113.8', 'wrong-1'));
    // Good credentials from the blocked address still get in: only failures are refused.
    const gina = await userToken('gina');
    await from('203.0.113.7', gina).expect(200);
  });
});

describe('Host', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ HOST: '127.0.0.1' });
  });
  afterAll(async () => t?.close());

  it('an app listening on loopback refuses Host: evil.example with 403 (DNS rebinding)', async () => {
    // supertest sends Host: 127.0.0.1:PORT, one of the service's names.
    await request(t.app).get('/me').expect(200);
    await request(t.app).get('/me').set('Host', 'localhost:3000').expect(200);
    for (const host of ['evil.example', 'evil.example:3000', '127.0.0.1.evil.example']) {
      expectProblem(await request(t.app).get('/me').set('Host', host), 403, 'forbidden');
      expectProblem(
        await request(t.app)
          .post(`/conversations/${uniqueId('rebind')}/mcp`)
          .set('Host', host)
          .set('Accept', 'application/json, text/event-stream')
          .send({}),
        403,
        'forbidden',
      );
      // Before any credentials are looked at: without a token it is 403 too, not 401.
      expectProblem(await anonymous(t.app).get('/me').set('Host', host), 403, 'forbidden');
    }
    // The probes answer any Host (orchestrators probe by address).
    await anonymous(t.app).get('/healthz').set('Host', 'evil.example').expect(200);
  });
});
