/**
 * GET /console/config.json and the console's CSP with sign-in by the
 * identity provider (src/http/console-oidc.ts): nothing offered without
 * CONSOLE_OIDC_CLIENT_ID; given endpoints served as they are; discovered ones
 * only from a document that names AUTH_ISSUER and allows S256; a provider that
 * cannot be reached leaves the console working with the pasted token, saying
 * why, never a 500. The full sign-in is test/browser/console-sso.test.ts.
 */
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { ensureConsoleBuilt } from '../support/console-build';
import { freePort } from '../support/free-port';
import { type TestApp, createTestApp } from '../support/test-app';

/** A server answering the discovery path with `doc(issuer)`; anything else 404. */
async function discoveryServer(doc: (issuer: string) => object): Promise<{ issuer: string; close(): Promise<void> }> {
  let issuer = '';
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/openid-configuration') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc(issuer)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const jwtEnv = (issuer: string) => ({
  HOST: '127.0.0.1',
  AUTH_JWKS_URL: `${issuer}/jwks`,
  AUTH_ISSUER: issuer,
  AUTH_AUDIENCE: 'https://gateway.test/api',
});

async function consoleConfigOf(env: Record<string, string>) {
  const app: TestApp = await createTestApp(env);
  try {
    const config = await supertest(app.app).get('/console/config.json');
    const page = await supertest(app.app).get('/console/callback');
    return { config, page, csp: String(page.headers['content-security-policy']).split('; ') };
  } finally {
    await app.close();
  }
}

beforeAll(() => ensureConsoleBuilt());

describe('GET /console/config.json', () => {
  it('offers nothing without CONSOLE_OIDC_CLIENT_ID, and the CSP connects to the service only', async () => {
    const { config, csp } = await consoleConfigOf({ HOST: '127.0.0.1' });
    expect(config.status).toBe(200);
    expect(config.body).toEqual({ oidc: null });
    expect(csp).toContain("connect-src 'self'");
  });

  it('serves given endpoints as they are, without credentials; the token endpoint origin joins connect-src', async () => {
    const { config, page, csp } = await consoleConfigOf({
      ...jwtEnv('https://idp.example'),
      CONSOLE_OIDC_CLIENT_ID: 'console',
      CONSOLE_OIDC_SCOPES: 'openid profile',
      CONSOLE_OIDC_AUTHORIZATION_URL: 'https://login.example/authorize',
      CONSOLE_OIDC_TOKEN_URL: 'https://tokens.example:8443/oauth/token',
    });
    expect(config.status).toBe(200);
    expect(config.headers['cache-control']).toBe('no-store');
    expect(config.body).toEqual({
      oidc: {
        authorizationEndpoint: 'https://login.example/authorize',
        tokenEndpoint: 'https://tokens.example:8443/oauth/token',
        clientId: 'console',
        scopes: 'openid profile',
      },
    });
    expect(page.status).toBe(200);
    // Only the token endpoint's origin: the authorization endpoint is navigated to, not fetched.
    expect(csp).toContain("connect-src 'self' https://tokens.example:8443");
    expect(csp.join('; ')).not.toContain('login.example');
    expect(csp.join('; ')).not.toContain('unsafe-inline');
  });

  it('discovers the endpoints from the issuer, and refuses a document naming another issuer or lacking S256', async () => {
    const good = await discoveryServer((issuer) => ({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      code_challenge_methods_supported: ['S256'],
    }));
    const otherIssuer = await discoveryServer(() => ({
      issuer: 'https://someone-else.example',
      authorization_endpoint: 'https://someone-else.example/authorize',
      token_endpoint: 'https://someone-else.example/token',
    }));
    const plainOnly = await discoveryServer((issuer) => ({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      code_challenge_methods_supported: ['plain'],
    }));
    try {
      const found = await consoleConfigOf({ ...jwtEnv(good.issuer), CONSOLE_OIDC_CLIENT_ID: 'console' });
      expect(found.config.body.oidc).toMatchObject({
        authorizationEndpoint: `${good.issuer}/authorize`,
        tokenEndpoint: `${good.issuer}/token`,
      });
      expect(found.csp).toContain(`connect-src 'self' ${good.issuer}`);
      for (const bad of [otherIssuer, plainOnly]) {
        const refused = await consoleConfigOf({ ...jwtEnv(bad.issuer), CONSOLE_OIDC_CLIENT_ID: 'console' });
        expect(refused.config.body).toEqual({ oidc: null, oidcUnavailable: expect.stringContaining('paste a token') });
        expect(refused.csp).toContain("connect-src 'self'");
      }
    } finally {
      await Promise.all([good.close(), otherIssuer.close(), plainOnly.close()]);
    }
  });

  it('a provider that cannot be reached: the page is served, sign-in by token only, saying why', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const { config, page, csp } = await consoleConfigOf({ ...jwtEnv(nobody), CONSOLE_OIDC_CLIENT_ID: 'console' });
    expect(config.status).toBe(200);
    expect(config.body).toEqual({ oidc: null, oidcUnavailable: expect.stringContaining('cannot be discovered') });
    expect(page.status).toBe(200);
    expect(csp).toContain("connect-src 'self'");
  });
});
