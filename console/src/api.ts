/**
 * The console's only way to the service: its public API, with the token the
 * person pasted (kept in sessionStorage: gone when the tab closes).
 */
const TOKEN_KEY = 'console.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/**
 * Dispatched on window when the API answers 401 to a request made with the
 * stored token: it is no longer good (expired, as an identity provider's
 * access tokens soon are, or revoked), and the console asks for a sign-in.
 */
export const TOKEN_REFUSED_EVENT = 'console:token-refused';

/** A refusal from the API: its status, and the problem's or negotiate's code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ApiResponse<T> {
  body: T;
  headers: Headers;
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http_error';
  let message = `${res.status} ${res.statusText}`;
  try {
    const problem = (await res.json()) as { code?: string; detail?: string; title?: string; error?: string };
    code = problem.code ?? code;
    message = problem.detail ?? problem.error ?? problem.title ?? message;
  } catch {
    // Not JSON: the status line says enough.
  }
  return new ApiError(res.status, code, message);
}

export async function apiFull<T>(path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  const token = storedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const res = await fetch(path, { method: options.method ?? 'GET', headers, body, cache: 'no-store' });
  if (res.status === 401 && token) window.dispatchEvent(new Event(TOKEN_REFUSED_EVENT));
  if (!res.ok) throw await errorOf(res);
  const parsed = res.status === 204 ? undefined : ((await res.json()) as T);
  return { body: parsed as T, headers: res.headers };
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  return (await apiFull<T>(path, options)).body;
}

export const enc = encodeURIComponent;

export function message(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code}, ${err.status})`;
  return err instanceof Error ? err.message : String(err);
}

// The API's shapes the console reads (openapi/openapi.json).
export type Level = 1 | 2 | 3;

export interface Me {
  subject: string;
  role: 'admin' | 'user' | 'agent';
  keyId?: string;
  conversationId?: string;
}

export interface Approval {
  id: string;
  conversationId: string;
  kind: 'call' | 'upgrade';
  tool: string;
  action: string;
  args: Record<string, unknown>;
  requiredLevel: Level;
  currentLevel: Level;
  requestedBy: string;
  status: 'pending' | 'approved' | 'rejected' | 'expired' | 'used' | 'satisfied';
  scope?: 'once' | 'conversation' | null;
  createdAt: number;
  expiresAt: number | null;
  decidedBy: string | null;
  decidedAt: number | null;
  reason?: string | null;
}

export interface ApiKey {
  id: string;
  role: 'admin' | 'user' | 'agent';
  subject: string;
  conversationId: string | null;
  maxLevel: number | null;
  label: string | null;
  expiresAt: number | null;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
}

export interface CreatedKey extends ApiKey {
  token: string;
}

export interface Conversation {
  id: string;
  owner: string | null;
  metadata: Record<string, unknown>;
  policy: { deny: string[] };
  createdAt: number;
  updatedAt: number;
}

export interface Resource {
  name: string;
  data: unknown;
  createdBy: string;
  updatedBy: string;
  createdAt: number;
  updatedAt: number;
  version: number;
}

export interface ToolPermission {
  tool: string;
  level: Level;
  source: 'explicit' | 'legacy' | 'default';
  upgradedAt: number | null;
}

export interface PermissionEvent {
  tool: string;
  fromLevel: number | null;
  toLevel: number;
  at: number;
  actor: string;
}

export interface AuditEntry {
  seq: number;
  at: number;
  actor: string;
  event: string;
  tool?: string;
  action?: string;
  outcome?: string;
  status?: number;
  approvalId?: string;
  hash: string;
}

export interface AuditVerification {
  ok: boolean;
  entries: number;
  head?: string;
  brokenAt?: number;
}

export const LEVEL_NAMES: Record<number, string> = { 1: 'read', 2: 'write', 3: 'execute' };

export function levelName(level: number | null | undefined): string {
  return level == null ? '—' : `${level} (${LEVEL_NAMES[level] ?? '?'})`;
}

export function when(ms: number | null | undefined): string {
  return ms == null ? '—' : new Date(ms).toLocaleString();
}
