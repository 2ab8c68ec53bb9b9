/**
 * The request limits on a tiny app: a stub authentication (X-Test-Principal
 * "role:subject[:keyId]" authenticates, no header fails) in front of the
 * real limiters, as the service's authentication will use them.
 */
import express, { type Express } from 'express';
import request from 'supertest';
import type { Principal, Role } from '../../src/core/principal';
import { sendProblem } from '../../src/http/middleware';
import { principalKey } from '../../src/core/principal';
import { failedAuthLimiter, principalRateLimit } from '../../src/http/rate-limits';

function limitedApp(limit: number, windowMs?: number): Express {
  const config = { rateLimitPerMinute: limit };
  const failures = failedAuthLimiter(config, { windowMs });
  const app = express();
  app.set('trust proxy', true);
  app.get('/blocked', async (req, res) => {
    res.json({ blocked: await failures.isBlocked(req) });
  });
  app.use(async (req, res, next) => {
    const given = req.get('X-Test-Principal');
    if (given === undefined) {
      return failures.fail(req, res, () => sendProblem(res, 'unauthorized', 'No credentials'));
    }
    const [role, subject, keyId] = given.split(':');
    const principal: Principal = { role: role as Role, subject: subject!, ...(keyId ? { keyId } : {}) };
    res.locals.principal = principal;
    next();
  });
  app.use(principalRateLimit(config, { windowMs }));
  app.get('/thing', (_req, res) => {
    res.json({ ok: true });
  });
  return app;
}

const as = (app: Express, principal: string) => request(app).get('/thing').set('X-Test-Principal', principal);
const from = (app: Express, address: string) => request(app).get('/thing').set('X-Forwarded-For', address);

/**
 * The limiters' store reads the time from Date: a fake Date is the tests'
 * clock. Only Date: timers and I/O stay real, so requests run as usual.
 */
function fakeClock(): { advance(ms: number): void } {
  jest.useFakeTimers({
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'requestAnimationFrame',
      'cancelAnimationFrame',
      'requestIdleCallback',
      'cancelIdleCallback',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
  return { advance: (ms) => jest.setSystemTime(Date.now() + ms) };
}

let consoleOutput: jest.SpyInstance[];
beforeEach(() => {
  // express-rate-limit reports misconfigurations on the console: there must be none.
  consoleOutput = [jest.spyOn(console, 'error'), jest.spyOn(console, 'warn')];
});
afterEach(() => {
  jest.useRealTimers();
  for (const spy of consoleOutput) {
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  }
});

describe('per principal', () => {
  it('answers N requests with counting-down headers, then 429 rate_limited with Retry-After', async () => {
    const app = limitedApp(3);
    for (const remaining of [2, 1, 0]) {
      const res = await as(app, 'user:alice').expect(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
      expect(res.headers['retry-after']).toBeUndefined();
    }
    const res = await as(app, 'user:alice').expect(429);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(res.headers['ratelimit-limit']).toBe('3');
    expect(res.headers['ratelimit-remaining']).toBe('0');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Number(res.headers['ratelimit-reset'])).toBe(retryAfter);
  });

  it('gives each principal its own budget', async () => {
    const app = limitedApp(2);
    await as(app, 'user:alice').expect(200);
    await as(app, 'user:alice').expect(200);
    await as(app, 'user:alice').expect(429);
    await as(app, 'user:bob').expect(200);
    await as(app, 'admin:alice').expect(200);
    // Agents of one owner: a budget per key.
    await as(app, 'agent:alice:k1').expect(200);
    await as(app, 'agent:alice:k1').expect(200);
    await as(app, 'agent:alice:k1').expect(429);
    await as(app, 'agent:alice:k2').expect(200);
  });

  it('keys by role and API key, or by subject without one', () => {
    expect(principalKey({ role: 'agent', subject: 'alice', keyId: 'k1' })).toBe('key:k1');
    expect(principalKey({ role: 'user', subject: 'alice' })).toBe('user:alice');
  });

  it('gives each app its own store', async () => {
    const first = limitedApp(1);
    const second = limitedApp(1);
    await as(first, 'user:alice').expect(200);
    await as(first, 'user:alice').expect(429);
    await as(second, 'user:alice').expect(200);
  });

  it('leaves requests without a principal alone', async () => {
    const app = express();
    app.use(principalRateLimit({ rateLimitPerMinute: 1 }));
    app.get('/open', (_req, res) => {
      res.json({ ok: true });
    });
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get('/open').expect(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });

  it('starts a new budget when the window ends', async () => {
    const clock = fakeClock();
    const app = limitedApp(2);
    await as(app, 'user:alice').expect(200);
    await as(app, 'user:alice').expect(200);
    expect((await as(app, 'user:alice').expect(429)).headers['retry-after']).toBe('60');
    clock.advance(59_000);
    expect((await as(app, 'user:alice').expect(429)).headers['retry-after']).toBe('1');
    clock.advance(1_000);
    const res = await as(app, 'user:alice').expect(200);
    expect(res.headers['ratelimit-remaining']).toBe('1');
    expect(res.headers['ratelimit-reset']).toBe('60');
  });

  it('takes another window', async () => {
    const clock = fakeClock();
    const app = limitedApp(1, 200);
    await as(app, 'user:alice').expect(200);
    // Retry-After is in whole seconds, rounded up.
    expect((await as(app, 'user:alice').expect(429)).headers['retry-after']).toBe('1');
    clock.advance(200);
    await as(app, 'user:alice').expect(200);
  });
});

describe('failed authentications per address', () => {
  it('answers N failures with 401, then 429 for that address only', async () => {
    const app = limitedApp(3);
    for (const remaining of [2, 1, 0]) {
      const res = await from(app, '203.0.113.7').expect(401);
      expect(res.body.code).toBe('unauthorized');
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
    }
    const res = await from(app, '203.0.113.7').expect(429);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['ratelimit-remaining']).toBe('0');
    await from(app, '203.0.113.7').expect(429);
    await from(app, '203.0.113.8').expect(401);
  });

  it('lets valid credentials through from a blocked address, without counting them', async () => {
    const app = limitedApp(3);
    await from(app, '203.0.113.7').expect(401);
    await from(app, '203.0.113.7').expect(401);
    // (Each its own principal, so that no principal's budget ends first.)
    for (let i = 0; i < 5; i++) {
      await from(app, '203.0.113.7').set('X-Test-Principal', `user:u${i}`).expect(200);
    }
    await from(app, '203.0.113.7').expect(401);
    await from(app, '203.0.113.7').expect(429);
    await from(app, '203.0.113.7').set('X-Test-Principal', 'user:alice').expect(200);
  });

  it('tells whether an address is blocked without counting', async () => {
    const app = limitedApp(1);
    const blocked = async (address: string) =>
      (await request(app).get('/blocked').set('X-Forwarded-For', address).expect(200)).body.blocked;
    expect(await blocked('203.0.113.7')).toBe(false);
    await from(app, '203.0.113.7').expect(401);
    expect(await blocked('203.0.113.7')).toBe(false);
    expect(await blocked('203.0.113.7')).toBe(false);
    await from(app, '203.0.113.7').expect(429);
    expect(await blocked('203.0.113.7')).toBe(true);
    expect(await blocked('203.0.113.8')).toBe(false);
  });

  it('counts an IPv6 client by its /56', async () => {
    const app = limitedApp(1);
    await from(app, '2001:db8:0:1::1').expect(401);
    await from(app, '2001:db8:0:2::9').expect(429);
    await from(app, '2001:db8:1::1').expect(401);
  });

  it('forgets the failures when the window ends', async () => {
    const clock = fakeClock();
    const app = limitedApp(1);
    await from(app, '203.0.113.7').expect(401);
    await from(app, '203.0.113.7').expect(429);
    clock.advance(59_999);
    await from(app, '203.0.113.7').expect(429);
    clock.advance(1);
    await from(app, '203.0.113.7').expect(401);
  });
});
