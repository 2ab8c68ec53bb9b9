/**
 * Swagger UI at /docs in a real browser (headless Debian Chromium driven by
 * playwright-core): its Authorize dialog takes the bearer token and "Try it
 * out" sends it, through the real app on a real port, Host/Origin guard and
 * authentication gate included.
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`; CHROMIUM_PATH
 * overrides). Without it the suite is skipped with a message, unless
 * CI_REQUIRE_BROWSER is set: then it fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type Page, type Request, type Response, chromium } from 'playwright-core';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { CHROMIUM_ARGS, CHROMIUM_PATH, browserRequired, chromiumPresent } from '../support/browser';
import { type TestApp, createTestApp } from '../support/test-app';

/** What one page asked for and got, to assert on after the clicks. */
interface Traffic {
  requests: Request[];
  responses: Response[];
  failed: { url: string; error: string }[];
}

if (!chromiumPresent && !browserRequired) {
  console.warn(
    `test/browser/swagger-ui.test.ts SKIPPED: no Chromium at ${CHROMIUM_PATH} ` +
      '(apt-get install -y chromium, or set CHROMIUM_PATH); set CI_REQUIRE_BROWSER=1 to make this a failure',
  );
}

(chromiumPresent || browserRequired ? describe : describe.skip)('Swagger UI at /docs in headless Chromium', () => {
  let testApp: TestApp;
  let server: Server;
  let base: string;
  let profileDir: string | undefined;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    if (!chromiumPresent) {
      throw new Error(
        `CI_REQUIRE_BROWSER is set but there is no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium`,
      );
    }
    // A loopback HOST, as a local run has it: the Host guard then answers only the loopback names.
    testApp = await createTestApp({ HOST: '127.0.0.1' });
    server = createServer(testApp.app);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    profileDir = mkdtempSync(join(tmpdir(), 'swagger-ui-chromium-'));
    // A persistent context on a new, empty profile directory: Playwright refuses --user-data-dir in args.
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 20000,
    });
    context.setDefaultTimeout(10000);
  });

  afterAll(async () => {
    await context?.close();
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await testApp?.close();
  });

  /** A new page on /docs, its traffic recorded, once the spec's operations are rendered. */
  async function openDocs(): Promise<{ page: Page; traffic: Traffic }> {
    const page = await context!.newPage();
    const traffic: Traffic = { requests: [], responses: [], failed: [] };
    page.on('request', (r) => traffic.requests.push(r));
    page.on('response', (r) => traffic.responses.push(r));
    page.on('requestfailed', (r) => traffic.failed.push({ url: r.url(), error: r.failure()?.errorText ?? '?' }));
    const response = await page.goto(`${base}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    await page.locator('#operations-Identity-Me').waitFor();
    return { page, traffic };
  }

  /**
   * Expands an operation (`Tag-OperationId`, or an Identity operation's id),
   * presses "Try it out", fills the path parameters and body, and presses
   * "Execute"; the response the browser got.
   */
  async function execute(
    page: Page,
    operationId: string,
    path: string,
    body?: string,
    params: Record<string, string> = {},
  ): Promise<Response> {
    const op = page.locator(`#operations-${operationId.includes('-') ? operationId : `Identity-${operationId}`}`);
    await op.locator('.opblock-summary-control').click();
    await op.getByRole('button', { name: 'Try it out' }).click();
    for (const [name, value] of Object.entries(params)) {
      await op.locator(`tr[data-param-name="${name}"] input`).fill(value);
    }
    if (body !== undefined) await op.locator('textarea.body-param__text').fill(body);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${base}${path}`),
      op.getByRole('button', { name: 'Execute' }).click(),
    ]);
    // Swagger UI's rendering of that response.
    await op.locator('.live-responses-table tbody .response-col_status').waitFor();
    return response;
  }

  const opSelector = (operationId: string): string =>
    `#operations-${operationId.includes('-') ? operationId : `Identity-${operationId}`}`;

  function shownStatus(page: Page, operationId: string): Promise<string> {
    return page
      .locator(`${opSelector(operationId)} .live-responses-table tbody .response-col_status`)
      .innerText()
      .then((s) => s.trim());
  }

  function shownBody(page: Page, operationId: string): Promise<string> {
    return page
      .locator(`${opSelector(operationId)} .live-responses-table tbody .response-col_description .highlight-code pre`)
      .innerText();
  }

  function shownCurl(page: Page, operationId: string): Promise<string> {
    return page.locator(`${opSelector(operationId)} .curl-command .curl`).innerText();
  }

  /**
   * Every request went to the service itself, nothing failed, and under /docs
   * everything was a 200 but the static server's redirect of /docs to /docs/.
   */
  async function expectCleanTraffic(traffic: Traffic): Promise<void> {
    const foreign = traffic.requests
      .map((r) => r.url())
      .filter((url) => !url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== base);
    expect(foreign).toEqual([]);
    expect(traffic.failed).toEqual([]);
    const docs = traffic.responses.filter((r) => new URL(r.url()).pathname.startsWith('/docs'));
    const redirect = docs.find((r) => new URL(r.url()).pathname === '/docs');
    expect(redirect?.status()).toBe(301);
    expect(await redirect?.headerValue('location')).toBe('/docs/');
    const assets = docs.filter((r) => r !== redirect).map((r) => `${r.status()} ${new URL(r.url()).pathname}`);
    // The page, swagger-ui-init.js, the bundle, the standalone preset and the CSS at least.
    expect(assets.length).toBeGreaterThanOrEqual(5);
    expect(assets.filter((line) => !line.startsWith('200 '))).toEqual([]);
  }

  it('Authorize takes the bearer token and "Try it out" sends it: GET /me is 200 as admin', async () => {
    const { page, traffic } = await openDocs();
    await expect(page.title()).resolves.toBe('Tool orchestration API');
    await expect(page.locator('.info .title').innerText()).resolves.toContain('Tool orchestration service');

    await page.locator('.scheme-container button.authorize').click();
    const dialog = page.locator('.modal-ux');
    // The spec's `bearer` scheme (tsoa.json securityDefinitions), with its token field.
    await dialog.locator('.auth-container h4', { hasText: 'bearer (http, Bearer)' }).waitFor();
    await dialog.getByLabel('auth-bearer-value').fill(TEST_ADMIN_TOKEN);
    await dialog.locator('.auth-btn-wrapper button', { hasText: /^Authorize$/ }).click();
    // Authorized: the dialog offers Logout instead, and the button shows the lock closed.
    await dialog.locator('.auth-btn-wrapper button', { hasText: /^Logout$/ }).waitFor();
    await dialog.locator('.auth-btn-wrapper button', { hasText: /^Close$/ }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator('.scheme-container button.authorize.locked').waitFor();

    const response = await execute(page, 'Me', '/me');
    expect(response.status()).toBe(200);
    expect(await response.request().headerValue('authorization')).toBe(`Bearer ${TEST_ADMIN_TOKEN}`);
    expect(await shownStatus(page, 'Me')).toBe('200');
    expect(await shownBody(page, 'Me')).toContain('"role": "admin"');
    expect(await shownCurl(page, 'Me')).toContain(`Authorization: Bearer ${TEST_ADMIN_TOKEN}`);

    // A POST carries the page's Origin (http://127.0.0.1:PORT), which the Origin guard must take as the service's own.
    const created = await execute(page, 'CreateKey', '/keys', '{"role": "user", "subject": "swagger-ui"}');
    expect(created.status()).toBe(201);
    expect(await created.request().headerValue('origin')).toBe(base);
    expect(await created.request().headerValue('authorization')).toBe(`Bearer ${TEST_ADMIN_TOKEN}`);
    expect(await shownStatus(page, 'CreateKey')).toBe('201');
    expect(await shownBody(page, 'CreateKey')).toContain('"subject": "swagger-ui"');

    await expectCleanTraffic(traffic);
    await page.close();
  });

  it('negotiate through "Try it out": a run that succeeds and a refusal, each shown with its status and body', async () => {
    const { page, traffic } = await openDocs();
    await page.locator('.scheme-container button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.getByLabel('auth-bearer-value').fill(TEST_ADMIN_TOKEN);
    await dialog.locator('.auth-btn-wrapper button', { hasText: /^Authorize$/ }).click();
    await dialog.locator('.auth-btn-wrapper button', { hasText: /^Close$/ }).click();
    await page.locator('.scheme-container button.authorize.locked').waitFor();

    const op = 'Negotiate-Negotiate';
    const opBlock = page.locator(`#operations-${op}`);
    // The spec's summary, shown on the collapsed operation.
    await expect(opBlock.locator('.opblock-summary-description').innerText()).resolves.toBe(
      'Route, authorize and run an action',
    );

    const conversation = `swagger-${Date.now().toString(36)}`;
    const body = '{"action": "add", "tool": "calculator", "args": {"a": 2, "b": 3}}';
    const ran = await execute(page, op, `/conversations/${conversation}/negotiate`, body, {
      conversationId: conversation,
    });
    expect(ran.status()).toBe(200);
    expect(await ran.request().headerValue('authorization')).toBe(`Bearer ${TEST_ADMIN_TOKEN}`);
    expect(JSON.parse(ran.request().postData() ?? '')).toEqual(JSON.parse(body));
    expect(await shownStatus(page, op)).toBe('200');
    const shown = JSON.parse(await shownBody(page, op)) as Record<string, unknown>;
    expect(shown).toMatchObject({
      success: true,
      output: { result: 5 },
      routing: { tool: 'calculator', action: 'add', explicit: true },
    });

    // The same form again, now an action that needs a higher level: a 403 refusal shown as the API sent it.
    const refusedBody = '{"action": "create-resource", "args": {"name": "notes", "data": {"text": "hi"}}}';
    await opBlock.locator('textarea.body-param__text').fill(refusedBody);
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${base}/conversations/${conversation}/negotiate` && r.status() !== 200),
      opBlock.getByRole('button', { name: 'Execute' }).click(),
    ]);
    expect(refused.status()).toBe(403);
    await opBlock.locator('.live-responses-table tbody .response-col_status', { hasText: '403' }).waitFor();
    expect(JSON.parse(await shownBody(page, op))).toMatchObject({
      success: false,
      code: 'permission_required',
      requiresApproval: true,
    });

    await expectCleanTraffic(traffic);
    await page.close();
  });

  it('without Authorize, "Try it out" on GET /me shows 401', async () => {
    const { page, traffic } = await openDocs();
    await page.locator('.scheme-container button.authorize.unlocked').waitFor();

    const response = await execute(page, 'Me', '/me');
    expect(response.status()).toBe(401);
    expect(await response.request().headerValue('authorization')).toBeNull();
    expect(await shownStatus(page, 'Me')).toBe('401');
    expect(await shownBody(page, 'Me')).toContain('"status": 401');
    expect(await shownCurl(page, 'Me')).not.toContain('Authorization');

    await expectCleanTraffic(traffic);
    await page.close();
  });
});
