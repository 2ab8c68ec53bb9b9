/**
 * Sign-in with the identity provider: OAuth 2.0 authorization code with PKCE
 * (RFC 7636, S256), as a public client (no secret: a page cannot keep one).
 *
 * startSignIn makes a code verifier, a state and a nonce, keeps them in this
 * tab's sessionStorage and goes to the provider's authorization endpoint with
 * the verifier's SHA-256 as the challenge. The provider sends the browser back
 * to /console/callback; finishSignIn takes the code only if the state is the
 * one this tab sent (a response to someone else's request is refused), clears
 * the code from the address bar, and exchanges it at the token endpoint with
 * the verifier. The access token is the JWT the service accepts (its audience
 * is the service); it is kept in sessionStorage like a pasted token.
 */
export interface OidcSettings {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  clientId: string;
  scopes: string;
}

export interface ConsoleConfig {
  oidc: OidcSettings | null;
  oidcUnavailable?: string;
}

const PENDING_KEY = 'console.oidc';
export const CALLBACK_PATH = '/callback';

interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
}

/** What the page says when sign-in with the provider goes wrong. */
export class SignInError extends Error {}

export async function loadConsoleConfig(): Promise<ConsoleConfig> {
  try {
    const res = await fetch('/console/config.json', { cache: 'no-store', headers: { accept: 'application/json' } });
    return res.ok ? ((await res.json()) as ConsoleConfig) : { oidc: null };
  } catch {
    return { oidc: null };
  }
}

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** 32 random bytes: a 43-character verifier (RFC 7636 §4.1 asks for 43 to 128), 256 bits for state and nonce. */
function random(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function challengeOf(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

export function redirectUri(): string {
  return `${window.location.origin}/console${CALLBACK_PATH}`;
}

export async function startSignIn(settings: OidcSettings): Promise<void> {
  const pending: Pending = { state: random(), nonce: random(), verifier: random(), redirectUri: redirectUri() };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(settings.authorizationEndpoint);
  const params = {
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: pending.redirectUri,
    scope: settings.scopes,
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: await challengeOf(pending.verifier),
    code_challenge_method: 'S256',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  window.location.assign(url.href);
}

/** The sign-in this tab started, once: a second use of the same state finds nothing. */
function takePending(): Pending | null {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as Pending;
  } catch {
    return null;
  }
}

export function forgetPendingSignIn(): void {
  sessionStorage.removeItem(PENDING_KEY);
}

/** The nonce in the ID token, if one came: it must be this sign-in's (the token came straight from the provider over TLS). */
function checkNonce(idToken: unknown, nonce: string): void {
  if (typeof idToken !== 'string') return;
  let claims: { nonce?: unknown };
  try {
    const part = idToken.split('.')[1] ?? '';
    claims = JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/'))) as { nonce?: unknown };
  } catch {
    throw new SignInError('The identity provider sent an ID token that cannot be read: nothing was accepted.');
  }
  if (claims.nonce !== nonce) {
    throw new SignInError('The ID token is not for this sign-in (its nonce differs): nothing was accepted.');
  }
}

async function exchange(settings: OidcSettings, code: string, pending: Pending): Promise<string> {
  let res: Response;
  try {
    res = await fetch(settings.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: pending.redirectUri,
        client_id: settings.clientId,
        code_verifier: pending.verifier,
      }),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new SignInError('The identity provider cannot be reached to finish the sign-in.');
  }
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const code = typeof body.error === 'string' ? body.error : String(res.status);
    const detail = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
    throw new SignInError(`The identity provider refused the code (${code})${detail}.`);
  }
  if (
    typeof body.access_token !== 'string' ||
    (typeof body.token_type === 'string' ? body.token_type : '').toLowerCase() !== 'bearer'
  ) {
    throw new SignInError('The identity provider sent no bearer access token.');
  }
  checkNonce(body.id_token, pending.nonce);
  return body.access_token;
}

/**
 * The token from the provider's answer in `search` (the callback's query).
 * The code leaves the address bar first, whatever happens next, so it is
 * neither bookmarked nor sent again by a reload.
 */
export async function finishSignIn(settings: OidcSettings | null, search: string): Promise<string> {
  const query = new URLSearchParams(search);
  window.history.replaceState(null, '', '/console/');
  const pending = takePending();
  const error = query.get('error');
  if (error) {
    const description = query.get('error_description');
    throw new SignInError(
      `The identity provider did not sign you in: ${error}${description ? ` (${description})` : ''}.`,
    );
  }
  const state = query.get('state');
  const code = query.get('code');
  if (!pending || !state || state !== pending.state) {
    throw new SignInError(
      'This sign-in response does not match the sign-in this tab started (its state differs): nothing was accepted. Sign in again.',
    );
  }
  if (!code) throw new SignInError('The identity provider sent no authorization code.');
  if (!settings) throw new SignInError('Sign-in with the identity provider is not offered now.');
  return exchange(settings, code, pending);
}
