/**
 * The console's sign-in with the identity provider (authorization code with
 * PKCE), in headless Chromium against a real OpenID Provider (oidc-provider,
 * test/fixtures/oidc-idp.mjs) whose JWTs the service accepts: the owner
 * presses the button, signs in at the provider's login form, consents, comes
 * back to the console, sees the pending approval of their conversation in the
 * inbox and approves it (an API call with the provider's token). A tampered
 * state, a wrong code verifier and a refusal at the provider each leave the
 * person signed out, saying why.
 *
 * Needs /usr/bin/chromium, like test/browser/console.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { type RequestListener, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type Page, type Request, chromium } from 'playwright-core';
import { PROJECT_ROOT } from '../../src/project-root';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { CHROMIUM_ARGS, CHROMIUM_PATH, browserRequired, chromiumPresent, expectAccessible } from '../support/browser';
import { ensureConsoleBuilt } from '../support/console-build';
import { type TestIdp, startTestIdp } from '../support/oidc-idp';
import { type TestApp, createTestApp } from '../support/test-app';

const SHOTS =
  process.env.CONSOLE_SCREENSHOTS === '1'
    ? join(PROJECT_ROOT, 'docs', 'console')
    : mkdtempSync(join(tmpdir(), 'console-sso-shots-'));
const AUDIENCE = 'https://gateway.test/api';
const CLIENT_ID = 'gateway-console';
const SSO_BUTTON = 'Sign in with your identity provider';

if (!chromiumPresent && !browserRequired) {
  console.warn(`test/browser/console-sso.test.ts SKIPPED: no Chromium at ${CHROMIUM_PATH}`);
}

// JSON bodies from the API, asserted on as the other suites do.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type JsonBody = any;

(chromiumPresent || browserRequired ? describe : describe.skip)(
  'console sign-in with the identity provider (PKCE)',
  () => {
    let testApp: TestApp;
    let server: Server;
    let base: string;
    let idp: TestIdp;
    let profileDir: string | undefined;
    let context: BrowserContext | undefined;
    let page: Page;
    const cspReports: string[] = [];
    /** Requests for origins other than the service's and the provider's (refused, and listed). */
    const foreign: string[] = [];
    /** The token requests the page made at the provider. */
    const tokenRequests: Request[] = [];
    const owner = `sso-owner-${Date.now().toString(36)}`;
    const conversation = `sso-${Date.now().toString(36)}`;
    let ownerKey: string;
    let agentKey: string;
    let approvalId: string;

    async function call(
      token: string,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; body: JsonBody }> {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
    }

    const CREATE = { action: 'create-resource', args: { name: 'sso-report', data: { total: 7 } } };

    beforeAll(async () => {
      if (!chromiumPresent) throw new Error(`CI_REQUIRE_BROWSER is set but there is no Chromium at ${CHROMIUM_PATH}`);
      ensureConsoleBuilt();
      mkdirSync(SHOTS, { recursive: true });
      // The service's address first: the provider must know the console's redirect URI, the service the provider's issuer.
      let app: RequestListener = (_req, res) => res.writeHead(503).end();
      server = createServer((req, res) => app(req, res));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      idp = await startTestIdp({ clientId: CLIENT_ID, redirectUri: `${base}/console/callback`, audience: AUDIENCE });
      testApp = await createTestApp({
        HOST: '127.0.0.1',
        AUTH_JWKS_URL: `${idp.issuer}/jwks`,
        AUTH_ISSUER: idp.issuer,
        AUTH_AUDIENCE: AUDIENCE,
        CONSOLE_OIDC_CLIENT_ID: CLIENT_ID,
      });
      app = testApp.app;

      // The owner's conversation (made with a key of the same subject), and its agent's call waiting for approval.
      const minted = await call(TEST_ADMIN_TOKEN, 'POST', '/keys', { role: 'user', subject: owner });
      ownerKey = minted.body.token;
      expect((await call(ownerKey, 'POST', '/conversations', { id: conversation })).status).toBe(201);
      const agent = await call(ownerKey, 'POST', `/conversations/${conversation}/agent-keys`, { label: 'sso-bot' });
      agentKey = agent.body.token;
      const refused = await call(agentKey, 'POST', `/conversations/${conversation}/negotiate`, CREATE);
      expect(refused).toMatchObject({ status: 403, body: { approval: { status: 'pending' } } });
      approvalId = refused.body.approval.id;

      profileDir = mkdtempSync(join(tmpdir(), 'console-sso-chromium-'));
      context = await chromium.launchPersistentContext(profileDir, {
        executablePath: CHROMIUM_PATH,
        headless: true,
        args: CHROMIUM_ARGS,
        timeout: 20000,
        viewport: { width: 1200, height: 900 },
      });
      context.setDefaultTimeout(10000);
      // The provider's development pages import a web font: nothing leaves the machine.
      await context.route(
        (url) => url.origin !== base && url.origin !== idp.issuer,
        (route) => {
          foreign.push(route.request().url());
          return route.abort();
        },
      );
      page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => {
        if (/Content[- ]Security[- ]Policy/i.test(m.text())) cspReports.push(m.text());
      });
      page.on('request', (r) => {
        if (r.url() === `${idp.issuer}/token`) tokenRequests.push(r);
      });
    });

    afterAll(async () => {
      await context?.close();
      if (profileDir) rmSync(profileDir, { recursive: true, force: true });
      if (process.env.CONSOLE_SCREENSHOTS !== '1') rmSync(SHOTS, { recursive: true, force: true });
      if (server) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await testApp?.close();
      await idp?.close();
    });

    /** Every sign-in starts signed out, at the provider's login form: its session cookies go first. */
    async function pressSignIn(): Promise<void> {
      await context!.clearCookies();
      await page.goto(`${base}/console`, { waitUntil: 'load' });
      // Signed out, whatever the test before left.
      await page.evaluate('sessionStorage.clear()');
      await page.reload({ waitUntil: 'load' });
      await page.getByRole('button', { name: SSO_BUTTON }).click();
      await page.waitForURL((url) => url.origin === idp.issuer);
    }

    async function loginAtProvider(subject: string): Promise<void> {
      await page.locator('input[name="login"]').fill(subject);
      await page.locator('input[name="password"]').fill('any password');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
    }

    const storage = () =>
      page.evaluate<{ session: Record<string, string>; local: number }>(
        '({ session: Object.fromEntries(Object.entries(sessionStorage)), local: localStorage.length })',
      );

    it('offers the sign-in: config.json names the discovered endpoints, the CSP adds the token endpoint origin only', async () => {
      const res = await fetch(`${base}/console/config.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual({
        oidc: {
          authorizationEndpoint: `${idp.issuer}/auth`,
          tokenEndpoint: `${idp.issuer}/token`,
          clientId: CLIENT_ID,
          scopes: 'openid',
        },
      });
      const pageRes = await fetch(`${base}/console/callback`);
      const csp = pageRes.headers.get('content-security-policy') ?? '';
      expect(csp.split('; ')).toContain(`connect-src 'self' ${idp.issuer}`);
      expect(csp.split('; ')).toContain("script-src 'self'");
      expect(csp.split('; ')).toContain("form-action 'self'");
      expect(csp).not.toContain('unsafe-inline');
    });

    it('the owner signs in at the provider, comes back to the inbox and approves their agent’s call with the JWT', async () => {
      await page.goto(`${base}/console`, { waitUntil: 'load' });
      await page.getByRole('button', { name: SSO_BUTTON }).waitFor();
      await expectAccessible(page, 'sign-in with the identity provider');
      await page.screenshot({ path: join(SHOTS, 'sign-in-sso.png'), fullPage: true });

      await pressSignIn();
      const authorize = new URL(page.url());
      expect(authorize.pathname).toMatch(/^\/interaction\//);
      await loginAtProvider(owner);
      await page.getByTestId('who').waitFor();
      await expect(page.getByTestId('who').innerText()).resolves.toContain(`Signed in as ${owner} (user)`);
      // The code is gone from the address bar, and from history: the callback's address was replaced.
      expect(page.url()).toBe(`${base}/console/`);

      // One token request, with the verifier and no secret; the JWT kept in sessionStorage only, nothing pending.
      expect(tokenRequests).toHaveLength(1);
      const form = new URLSearchParams(tokenRequests[0]!.postData() ?? '');
      expect(form.get('grant_type')).toBe('authorization_code');
      expect(form.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
      expect(form.get('client_id')).toBe(CLIENT_ID);
      expect(form.has('client_secret')).toBe(false);
      const stored = await storage();
      expect(Object.keys(stored.session)).toEqual(['console.token']);
      expect(stored.local).toBe(0);
      const jwt = stored.session['console.token']!;
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      expect(claims).toMatchObject({ iss: idp.issuer, aud: AUDIENCE, sub: owner });

      // The inbox: the agent's call, approved in the page (the API call made with the provider's token).
      const card = page.locator(`[data-approval="${approvalId}"]`);
      await card.waitFor();
      await expectAccessible(page, 'inbox after sign-in with the identity provider');
      await card.getByRole('button', { name: 'Approve once' }).click();
      await card.waitFor({ state: 'detached' });
      const decided = await call(ownerKey, 'GET', `/conversations/${conversation}/approvals/${approvalId}`);
      expect(decided.body).toMatchObject({ status: 'approved', decidedBy: `user:${owner}` });
      const retry = await call(agentKey, 'POST', `/conversations/${conversation}/negotiate`, { ...CREATE, approvalId });
      expect(retry).toMatchObject({ status: 200, body: { success: true } });
      // The same JWT works from outside the page too.
      expect(await call(jwt, 'GET', '/me')).toMatchObject({ status: 200, body: { subject: owner, role: 'user' } });

      // Signing out forgets the token.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: SSO_BUTTON }).waitFor();
      expect((await storage()).session).toEqual({});
    });

    it('a tampered state is refused: the code is never exchanged, nothing is kept', async () => {
      const before = tokenRequests.length;
      /**
       * The provider's answer, its state changed on the way back (as a forged callback would carry). The consent's
       * POST starts the redirects that end at the callback (a route sees only the first request of a chain): they
       * are followed here, with the browser's cookies, and the browser is sent to the callback with another state.
       */
      let tampered: string | undefined;
      const consent = `${idp.issuer}/interaction/**`;
      await page.route(consent, async (route) => {
        if (route.request().method() !== 'POST' || !/prompt=consent/.test(route.request().postData() ?? '')) {
          return route.continue();
        }
        let response = await route.fetch({ maxRedirects: 0 });
        while (response.status() >= 300 && response.status() < 400) {
          const next = new URL(response.headers().location!, response.url());
          if (next.origin === base) {
            expect(next.searchParams.get('code')).toBeTruthy();
            next.searchParams.set('state', 'not-the-state-this-tab-sent');
            tampered = next.href;
            return route.fulfill({ status: 303, headers: { location: tampered } });
          }
          response = await context!.request.get(next.href, { maxRedirects: 0 });
        }
        return route.fulfill({ response });
      });
      try {
        await pressSignIn();
        await loginAtProvider(owner);
        const error = page.getByTestId('sign-in-error');
        await error.waitFor();
        await expect(error.innerText()).resolves.toContain('its state differs');
      } finally {
        await page.unroute(consent);
      }
      expect(tampered).toContain('/console/callback?');
      expect(tokenRequests.length).toBe(before);
      expect(page.url()).toBe(`${base}/console/`);
      expect((await storage()).session).toEqual({});
      await expect(page.getByTestId('who').count()).resolves.toBe(0);
    });

    it('a wrong code verifier is refused by the provider, and the console says so', async () => {
      await page.route(`${idp.issuer}/token`, (route) => {
        const form = new URLSearchParams(route.request().postData() ?? '');
        form.set('code_verifier', 'x'.repeat(43));
        return route.continue({ postData: form.toString() });
      });
      try {
        await pressSignIn();
        await loginAtProvider(owner);
        const error = page.getByTestId('sign-in-error');
        await error.waitFor();
        await expect(error.innerText()).resolves.toContain('refused the code (invalid_grant)');
      } finally {
        await page.unroute(`${idp.issuer}/token`);
      }
      expect((await storage()).session).toEqual({});
    });

    it('an ID token for another sign-in (its nonce differs) is refused, its access token not kept', async () => {
      let swapped = false;
      await page.route(`${idp.issuer}/token`, async (route) => {
        const response = await route.fetch();
        const body = (await response.json()) as { id_token: string };
        const [header, payload, signature] = body.id_token.split('.') as [string, string, string];
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
        const replayed = Buffer.from(JSON.stringify({ ...claims, nonce: 'another-sign-in' })).toString('base64url');
        swapped = true;
        await route.fulfill({ response, json: { ...body, id_token: `${header}.${replayed}.${signature}` } });
      });
      try {
        await pressSignIn();
        await loginAtProvider(owner);
        const error = page.getByTestId('sign-in-error');
        await error.waitFor();
        await expect(error.innerText()).resolves.toContain('its nonce differs');
      } finally {
        await page.unroute(`${idp.issuer}/token`);
      }
      expect(swapped).toBe(true);
      expect((await storage()).session).toEqual({});
    });

    it('a sign-in cancelled at the provider comes back as access_denied, shown', async () => {
      await pressSignIn();
      await page.getByRole('link', { name: '[ Cancel ]' }).click();
      const error = page.getByTestId('sign-in-error');
      await error.waitFor();
      await expect(error.innerText()).resolves.toContain('did not sign you in: access_denied');
      await expectAccessible(page, 'sign-in error');
      expect((await storage()).session).toEqual({});
      // Both ways to sign in are offered again.
      await page.getByRole('button', { name: SSO_BUTTON }).waitFor();
      await page.getByLabel('Token').waitFor();
    });

    it('a token refused while signed in (revoked; an access token that expired alike) brings back the sign-in', async () => {
      const minted = await call(TEST_ADMIN_TOKEN, 'POST', '/keys', {
        role: 'user',
        subject: owner,
        label: 'short-lived',
      });
      await page.goto(`${base}/console`, { waitUntil: 'load' });
      await page.evaluate('sessionStorage.clear()');
      await page.reload({ waitUntil: 'load' });
      await page.getByLabel('Token').fill(minted.body.token);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      // A page that calls the API only when opened (the inbox's event stream would notice the revocation itself).
      await page.getByRole('link', { name: 'Conversations' }).click();
      await page.getByRole('link', { name: conversation }).waitFor();
      expect((await call(TEST_ADMIN_TOKEN, 'DELETE', `/keys/${minted.body.id}`)).status).toBe(204);
      await page.getByRole('link', { name: 'Decided' }).click();
      const error = page.getByTestId('sign-in-error');
      await error.waitFor();
      await expect(error.innerText()).resolves.toContain('no longer valid');
      expect((await storage()).session).toEqual({});
    });

    it('nothing broke the CSP and nothing went anywhere but the service and the provider', () => {
      expect(cspReports).toEqual([]);
      // The provider's own login page imports a web font; the console itself asks for nothing elsewhere.
      expect(foreign.filter((url) => !url.startsWith('https://fonts.googleapis.com/'))).toEqual([]);
    });
  },
);
