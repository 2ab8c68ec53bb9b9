/**
 * Credentials for tests: every app and spawned server of the suite accepts
 * TEST_ADMIN_TOKEN as its ADMIN_API_KEY, and `request(app)` is supertest
 * with that bearer token set, so a test that is not about identity reads as
 * it did before. Tests about identity mint their own keys.
 */
import type { Server } from 'node:http';
import type { Express } from 'express';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { createExpressServer } from '../../src/http/express-server';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** The env every test app and spawned server gets (a test's own env wins). */
export const TEST_AUTH_ENV: Record<string, string> = {
  ADMIN_API_KEY: TEST_ADMIN_TOKEN,
  // Suites make thousands of requests as one principal; the limit has its own tests.
  RATE_LIMIT_PER_MINUTE: '100000000',
  // Participants' secrets key: one for every app and replica of the suites (never a file under DATA_DIR).
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
};

export function bearer(token: string = TEST_ADMIN_TOKEN): { Authorization: string } {
  return { Authorization: `Bearer ${token}` };
}

type App = Parameters<typeof supertest>[0];

const servers = new WeakMap<Express, Server>();

/**
 * An express app is served as the entry file serves it (createExpressServer),
 * one server per app, which supertest starts and stops around its requests.
 */
function served(app: App): App {
  if (typeof app !== 'function' || !('handle' in app)) return app;
  const express = app as unknown as Express;
  let server = servers.get(express);
  if (!server) servers.set(express, (server = createExpressServer(express)));
  return server;
}

/** supertest with `Authorization: Bearer TOKEN` (the test admin's unless given). */
export function request(app: App, token: string = TEST_ADMIN_TOKEN): TestAgent {
  return supertest.agent(served(app)).set('Authorization', `Bearer ${token}`);
}

/** supertest without credentials. */
export const anonymous = Object.assign((app: App): ReturnType<typeof supertest> => supertest(served(app)), {
  agent: (app: App): TestAgent => supertest.agent(served(app)),
});
