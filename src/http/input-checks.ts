/**
 * Input the database cannot store, checked once at the edge so no endpoint
 * has to: Postgres text and jsonb refuse NUL characters (SQLSTATE 22P05) and
 * lone UTF-16 surrogates have no UTF-8 form (22021); deeply nested JSON costs
 * stack in every later walk (validation, serialisation). `__proto__` keys are
 * refused too: copying such an object (as tsoa's validation does) turns the
 * key into the copy's prototype, so the data is silently lost or crashes the
 * database client.
 */
import { isUtf8 } from 'node:buffer';
import type { RequestHandler } from 'express';
import { AppError, type FieldError, fieldProblem } from './problem';

/** API.md: JSON nested deeper than this is a 400. The body itself is level 1. */
export const MAX_JSON_DEPTH = 64;

/** The one body field whose failures are negotiate results (API.md Negotiate), not problems. */
const NEGOTIATE_PATH = /^\/conversations\/[^/]+\/negotiate\/?$/;
/** The MCP endpoint reads its own bodies and answers in JSON-RPC (src/mcp). */
const MCP_PATH = /^\/conversations\/[^/]+\/mcp\/?$/;

export class UnstorableInputError extends AppError {
  constructor(
    issue: FieldError,
    /** On negotiate, a failure inside `args` is answered as `invalid_args`. */
    public readonly inNegotiateArgs = false,
  ) {
    super('validation_failed', `${issue.path}: ${issue.message}`, [issue]);
  }
}

// With the u flag a surrogate pair reads as one astral code point, so this matches lone halves only.
const LONE_SURROGATE = /\p{Cs}/u;

/** Why a string cannot be stored, or undefined. */
function stringProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate';
  return undefined;
}

const NOT_FINITE = 'is a number too large to represent (beyond ±1.8e308)';

function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return parent ? `${parent}.${shown}` : shown;
}

/**
 * The first thing in a value that cannot be stored, with its path when
 * `path` is a string; with `path` null no path is built (the common case,
 * where nothing is wrong, then costs no string per node).
 */
function walk(value: unknown, path: string | null, depth: number): FieldError | undefined {
  const at = path || 'body';
  if (typeof value === 'string') {
    const problem = stringProblem(value);
    return problem ? { path: at, message: problem } : undefined;
  }
  // JSON.parse reads a number beyond double range (1e400) as Infinity, which would be stored as null.
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path: at, message: NOT_FINITE };
  if (value === null || typeof value !== 'object') return undefined;
  if (depth > MAX_JSON_DEPTH) return { path: at, message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], path === null ? null : childPath(path, i), depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    // The key is not echoed: it is what cannot be shown safely.
    const keyProblem = key === '__proto__' ? 'has a key named __proto__' : stringProblem(key);
    if (keyProblem) return { path: at, message: keyProblem.replace(/^contains/, 'has a key that contains') };
    const found = walk(child, path === null ? null : childPath(path, key), depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The first thing in a parsed JSON value that cannot be stored, or undefined: paths are built only then. */
export function findUnstorable(value: unknown, path = ''): FieldError | undefined {
  return walk(value, null, 1) && walk(value, path, 1);
}

/**
 * express.json's `verify`: a body that is not valid UTF-8 is refused rather
 * than decoded with replacement characters (which would store other data than
 * was sent). Native and linear, so it costs nothing noticeable on small bodies.
 */
export function verifyUtf8(_req: unknown, _res: unknown, buf: Buffer): void {
  if (!isUtf8(buf))
    throw Object.assign(new Error('Request body is not valid UTF-8'), { status: 400, type: 'encoding.invalid' });
}

/**
 * After express.json: a body it left unread is not JSON (text/plain, a form, no
 * Content-Type): 415, rather than a route answering as if no body were sent.
 */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  if (req.body !== undefined) return next();
  const { 'transfer-encoding': chunked, 'content-length': length, 'content-type': type } = req.headers;
  if ((chunked === undefined && (length === undefined || length === '0')) || MCP_PATH.test(req.path)) return next();
  next(
    new AppError(
      'unsupported_media_type',
      `Content-Type ${type ? `"${type}"` : '(none)'} is not accepted; send the body as application/json`,
    ),
  );
};

/** After express.json: refuses bodies with NUL, lone surrogates, `__proto__` keys or too deep nesting. */
export const checkJsonBody: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (body === undefined || body === null || typeof body !== 'object') return next();
  const issue = findUnstorable(body);
  if (!issue) return next();
  const inArgs = req.method === 'POST' && NEGOTIATE_PATH.test(req.path) && /^args(\.|\[|$)/.test(issue.path);
  next(new UnstorableInputError(issue, inArgs));
};

/**
 * Before routing: every path segment and query parameter must percent-decode
 * (express would throw a URIError later, a 500, or keep the bytes as text),
 * and neither may hold what the database cannot store.
 */
export const checkUrl: RequestHandler = (req, _res, next) => {
  // NUL and lone surrogates can only arrive percent-encoded (the HTTP parser
  // refuses control bytes, and raw bytes above 0x7F read as Latin-1), and
  // malformed encoding needs a '%': a URL without one has nothing to check.
  // This is every request of a well-behaved client, so it is the fast path.
  if (!req.url.includes('%')) return next();
  for (const segment of req.path.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return next(fieldProblem('path', 'has malformed percent-encoding'));
    }
    const problem = stringProblem(decoded);
    if (problem) return next(fieldProblem('path', problem));
  }
  // Express 5 parses req.query anew on every read: without a query string there is nothing to check.
  const q = req.originalUrl.indexOf('?');
  if (q < 0) return next();
  // The query parser decodes leniently (`%ff` stays `%ff`): check the raw text.
  for (const part of req.originalUrl.slice(q + 1).split(/[&;]/)) {
    try {
      decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      return next(fieldProblem('query', 'has malformed percent-encoding'));
    }
  }
  for (const [name, value] of Object.entries(req.query as Record<string, unknown>)) {
    const nameProblem = stringProblem(name);
    if (nameProblem) return next(fieldProblem('query', `has a parameter name that ${nameProblem}`));
    const issue = findUnstorable(value, name);
    if (issue) return next(fieldProblem(issue.path, issue.message));
  }
  next();
};
