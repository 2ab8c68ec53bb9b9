/**
 * What the console needs to sign a person in with the identity provider
 * (authorization code with PKCE, docs/console.md): the provider's
 * authorization and token endpoints, the console's client id and scopes.
 * Nothing here is secret (the console is a public client), so it is served
 * without credentials at GET /console/config.json, and the token endpoint's
 * origin is the one origin the console's CSP lets the page connect to.
 *
 * The endpoints are CONSOLE_OIDC_AUTHORIZATION_URL and CONSOLE_OIDC_TOKEN_URL
 * when given, else discovered from AUTH_ISSUER's OpenID Provider metadata
 * (OpenID Connect Discovery 1.0). Discovery happens on first use, not at boot,
 * so a provider that is down never stops the service: the console then offers
 * the pasted token only and says why. A document found is kept for an hour;
 * a failure is tried again after 30 s, and meanwhile the last good document
 * (if any) stays in use.
 */
import type { ConsoleOidcConfig } from '../config';
import type { Logger } from '../logger';

export interface ConsoleOidcSettings {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  clientId: string;
  scopes: string;
}

/** The body of GET /console/config.json. */
export interface ConsoleConfig {
  oidc: ConsoleOidcSettings | null;
  /** Set when sign-in with the provider is configured but its endpoints cannot be learned now. */
  oidcUnavailable?: string;
}

export interface ConsoleOidc {
  current(): Promise<ConsoleConfig>;
}

const KEEP_MS = 60 * 60 * 1000;
const RETRY_MS = 30 * 1000;
/** A provider slower than this holds up the console's page: it is better offered without sign-in. */
const DISCOVERY_TIMEOUT_MS = 5000;
const UNAVAILABLE = "The identity provider's endpoints cannot be discovered now: paste a token, or reload later.";

const NONE: ConsoleOidc = { current: () => Promise.resolve({ oidc: null }) };

function httpUrl(value: unknown, name: string): string {
  if (typeof value === 'string') {
    const url = URL.parse(value);
    if (url && (url.protocol === 'https:' || url.protocol === 'http:')) return url.href;
  }
  throw new Error(`the discovery document's ${name} is not an http(s) URL`);
}

/** The two endpoints from the issuer's metadata; the document must name this issuer, and allow S256 if it lists methods. */
async function discover(issuer: string): Promise<{ authorization: string; token: string }> {
  // Discovery §4: the issuer, without a trailing slash, then the well-known path.
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const res = await fetch(url, { signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS), redirect: 'error' });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  const doc = (await res.json()) as Record<string, unknown>;
  // Discovery §4.3: a document for another issuer is not this provider's.
  if (doc.issuer !== issuer) throw new Error(`the discovery document names issuer ${JSON.stringify(doc.issuer)}`);
  const methods = doc.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) throw new Error('the provider does not support PKCE S256');
  return {
    authorization: httpUrl(doc.authorization_endpoint, 'authorization_endpoint'),
    token: httpUrl(doc.token_endpoint, 'token_endpoint'),
  };
}

export function createConsoleOidc(
  cfg: ConsoleOidcConfig | undefined,
  issuer: string | undefined,
  logger: Logger,
): ConsoleOidc {
  if (!cfg || issuer === undefined) return NONE;
  const settingsOf = (e: { authorization: string; token: string }): ConsoleOidcSettings => ({
    authorizationEndpoint: e.authorization,
    tokenEndpoint: e.token,
    clientId: cfg.clientId,
    scopes: cfg.scopes,
  });
  if (cfg.endpoints) {
    const fixed: ConsoleConfig = { oidc: settingsOf(cfg.endpoints) };
    return { current: () => Promise.resolve(fixed) };
  }
  let found: ConsoleOidcSettings | undefined;
  let nextTry = 0;
  let pending: Promise<void> | undefined;
  const refresh = (): Promise<void> =>
    (pending ??= discover(issuer)
      .then((e) => {
        found = settingsOf(e);
        nextTry = Date.now() + KEEP_MS;
      })
      .catch((err: unknown) => {
        nextTry = Date.now() + RETRY_MS;
        logger.warn({ err, issuer }, 'console sign-in: OpenID Provider discovery failed');
      })
      .finally(() => {
        pending = undefined;
      }));
  return {
    async current() {
      if (Date.now() >= nextTry) {
        const refreshed = refresh();
        // With a document in hand, a page need not wait for the next one.
        if (!found) await refreshed;
      }
      return found ? { oidc: found } : { oidc: null, oidcUnavailable: UNAVAILABLE };
    },
  };
}
