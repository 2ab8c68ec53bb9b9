/**
 * GET /console (API.md, Console): the page and its assets from the build,
 * without credentials, under a strict CSP; the application's own routes get
 * the page; a missing build is a 503 that says how to make one.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import supertest from 'supertest';
import { CONSOLE_BUILD_DIR, consoleHandlers } from '../../src/http/console';
import { ensureConsoleBuilt } from '../support/console-build';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  ensureConsoleBuilt();
  t = await createTestApp({ HOST: '127.0.0.1' });
});
afterAll(() => t.close());

const anonymous = () => supertest(t.app);

function expectStrictCsp(res: supertest.Response): void {
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain("connect-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("base-uri 'none'");
  expect(csp).toContain("object-src 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
}

describe('GET /console', () => {
  it('serves the page without credentials, under a strict CSP, with no inline script', async () => {
    for (const path of ['/console', '/console/']) {
      const res = await anonymous().get(path).set('Host', '127.0.0.1');
      expect([path, res.status]).toEqual([path, 200]);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expectStrictCsp(res);
      // Every script is a file of the build: none has a body.
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.text).toContain('/console/assets/');
    }
  });

  it("the application's routes get the page; its assets are served with long caching; a missing asset is a 404", async () => {
    const page = readFileSync(join(CONSOLE_BUILD_DIR, 'index.html'), 'utf8');
    for (const path of ['/console/history', '/console/conversations/some%20id', '/console/keys']) {
      const res = await anonymous().get(path);
      expect([path, res.status, res.text]).toEqual([path, 200, page]);
    }
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page)![1]!;
    const asset = await anonymous().get(script);
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
    expect(asset.headers['cache-control']).toContain('immutable');
    expectStrictCsp(asset);
    const missing = await anonymous().get('/console/assets/nothing-here.js');
    expect(missing.status).toBe(404);
  });

  it('serves GET only (405 with Allow), like /docs', async () => {
    for (const method of ['post', 'put', 'delete', 'options'] as const) {
      const res = await anonymous()[method]('/console/');
      expect([method, res.status, res.headers.allow]).toEqual([method, 405, 'GET, HEAD']);
    }
  });

  it('keeps the Host guard: a foreign Host is refused', async () => {
    const res = await anonymous().get('/console').set('Host', 'evil.example');
    expect(res.status).toBe(403);
  });

  it('a missing build answers 503 saying to run npm run build:console, never a 500', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'console-missing-'));
    try {
      const app = express();
      app.use('/console', ...consoleHandlers(empty));
      for (const path of ['/console', '/console/inbox']) {
        const res = await supertest(app).get(path);
        expect([path, res.status]).toEqual([path, 503]);
        expect(res.text).toContain('npm run build:console');
        expectStrictCsp(res);
      }
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
