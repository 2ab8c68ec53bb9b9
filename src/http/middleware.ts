import { randomUUID } from 'node:crypto';
import { ValidateError } from '@tsoa/runtime';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';
import { unavailableCause } from '../core/errors';
import type { NegotiationResult } from '../core/negotiation';
import { actorOf } from '../core/principal';
import type { Logger } from '../logger';
import { routeOf } from '../observability/labels';
import type { Metrics } from '../observability/metrics';
import { allowedMethods, shadowingTails } from './allowed-methods';
import { UnstorableInputError } from './input-checks';
import { type OpenApiDocument, ParameterErrors } from './parameter-errors';
import { AppError, type FieldError, type ProblemCode, problemOf, toolErrorProblem } from './problem';
import { ToolError } from '../core/tool-interface';

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export function sendProblem(res: Response, code: ProblemCode, detail: string, errors?: FieldError[]): void {
  const requestId = res.getHeader('X-Request-Id');
  const problem = problemOf(code, detail, errors, typeof requestId === 'string' ? requestId : undefined);
  res.status(problem.status).type('application/problem+json').json(problem);
}

declare module 'express-serve-static-core' {
  interface Request {
    /** The request id, also sent back as X-Request-Id. */
    id?: string;
    /** A negotiate call's outcome, for its request log line (noteNegotiation). */
    negotiation?: NegotiationResult;
  }
}

/** Tells the request log how a negotiate call ended (tool, action, outcome). */
export function noteNegotiation(req: Request, result: NegotiationResult): void {
  req.negotiation = result;
}

/**
 * Refusals that are the permission model answering as designed, not trouble:
 * logged at info (an agent asking for an upgrade is the approval flow's start).
 */
const ANSWERED_REFUSALS = new Set(['permission_required', 'level_ceiling', 'denied']);

/** A negotiate call's fields in its request log line: never its args or any token. */
function negotiationFields(req: Request, result: NegotiationResult): Record<string, unknown> {
  const body = req.body as { action?: unknown } | undefined;
  const requested = typeof body?.action === 'string' ? body.action.slice(0, 128) : undefined;
  return {
    tool: result.routing?.tool,
    // The routed action; for a call that reached no tool, what was asked for.
    action: result.routing?.action ?? requested,
    outcome: result.success ? 'ok' : result.code,
  };
}

/**
 * Takes a well-formed X-Request-Id or makes one, returns it, and logs one
 * line per request when it finishes (with the principal, and for negotiate
 * the tool, action and outcome), and times it for http_request_duration_seconds.
 * Hand-written rather than pino-http: that builds a child logger per request,
 * which cost a quarter of the negotiate path's throughput (docs/BENCHMARKS.md);
 * this logs through the one logger.
 */
export function requestLogging(logger: Logger, metrics?: Metrics): RequestHandler {
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const start = performance.now();
    res.on('finish', () => {
      const status = res.statusCode;
      const ms = performance.now() - start;
      metrics?.observeRequest(req.method, routeOf(req), status, ms / 1000);
      const negotiation = req.negotiation;
      const level =
        status >= 500
          ? 'error'
          : status >= 400 && !(negotiation?.code !== undefined && ANSWERED_REFUSALS.has(negotiation.code))
            ? 'warn'
            : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const principal = req.principal ? actorOf(req.principal) : undefined;
      const line = { reqId: id, method: req.method, url: req.originalUrl, status, ms, principal };
      logger[level](negotiation ? { ...line, ...negotiationFields(req, negotiation) } : line, 'request completed');
    });
    next();
  };
}

/** After every route: a known path with another method is a 405 with Allow, anything else a 404. */
export function unmatchedRoute(app: Express): RequestHandler {
  return (req, res) => {
    const allow = allowedMethods(app, req.path);
    if (allow.length === 0) return sendProblem(res, 'not_found', `No route for ${req.method} ${req.path}`);
    sendMethodNotAllowed(res, req.method, allow);
  };
}

/** A 405 for `method` at a path that serves exactly `allow`, listed in the Allow header (RFC 9110, 15.5.6). */
export function sendMethodNotAllowed(res: Response, method: string, allow: readonly string[]): void {
  res.setHeader('Allow', allow.join(', '));
  sendProblem(res, 'method_not_allowed', `${method} is not supported here; use ${allow.join(', ')}`);
}

/**
 * Before the routes: OPTIONS is served by no route, so on a known path it is
 * a 405 with Allow, alike everywhere (a mounted router, such as the MCP
 * endpoint's, would otherwise answer it itself, with a 200); and a method
 * that only a shadowed parameter route would take is a 405 too.
 */
export function methodGuard(app: Express): RequestHandler {
  let tails: Set<string> | undefined;
  return (req, res, next) => {
    const options = req.method === 'OPTIONS';
    if (!options) {
      // Routes are all registered by the first request.
      tails ??= shadowingTails(app);
      const path = req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
      // Express matches paths case-insensitively.
      if (!tails.has(path.slice(path.lastIndexOf('/') + 1).toLowerCase())) return next();
    }
    const allow = allowedMethods(app, req.path);
    // No route here: a mount (/docs) or unmatchedRoute answers.
    if (allow.length === 0 || (!options && allow.includes(req.method))) return next();
    sendMethodNotAllowed(res, req.method, allow);
  };
}

/** What a mount serves only with GET (and HEAD): any other method is a 405 with Allow, not the page. */
export const getOnly: RequestHandler = (req, res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  sendMethodNotAllowed(res, req.method, ['GET', 'HEAD']);
};

/** The body parser's errors (http-errors with a `type`) that have a problem of their own. */
const BODY_PROBLEMS: Record<string, [ProblemCode, string]> = {
  'entity.too.large': ['payload_too_large', 'Request body is larger than BODY_LIMIT'],
  'entity.parse.failed': ['validation_failed', 'Request body is not valid JSON'],
  'encoding.unsupported': ['unsupported_media_type', 'Unsupported Content-Encoding; use gzip, deflate, br or none'],
  'encoding.invalid': ['validation_failed', 'Request body is not valid UTF-8'],
  'charset.unsupported': ['unsupported_media_type', 'Unsupported charset; send UTF-8'],
};

/** Valid JSON that is not an object or array (`null`, `42`, `"x"`): refused by the parser's strict mode. */
function isScalarJson(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

/** The body parser's errors as problems; false when it is not one of them. */
function bodyParserProblem(res: Response, type: string, status: number, body: unknown): boolean {
  if (type === 'entity.parse.failed' && isScalarJson(body)) {
    sendProblem(res, 'validation_failed', 'Request body must be a JSON object');
    return true;
  }
  const known = Object.hasOwn(BODY_PROBLEMS, type) ? BODY_PROBLEMS[type] : undefined;
  if (known) {
    sendProblem(res, known[0], known[1]);
    return true;
  }
  if (status >= 400 && status < 500) {
    // The rest are reading failures, such as a gzip body that is not gzip.
    sendProblem(res, 'validation_failed', 'Request body could not be read or decoded');
    return true;
  }
  return false;
}

/**
 * The one place errors become HTTP responses. Anything not known is a 500,
 * logged in full and answered generically: no stack or SQL leaves the service.
 */
export function errorHandler(logger: Logger, spec: OpenApiDocument = {}): ErrorRequestHandler {
  const parameterErrors = new ParameterErrors(spec);
  return (err: unknown, req, res, next) => {
    if (res.headersSent) return next(err);
    if (err instanceof UnstorableInputError && err.inNegotiateArgs) {
      // API.md Negotiate: args that cannot be used are a negotiate result, not a problem.
      return res.status(400).json({ success: false, code: 'invalid_args', error: `Invalid args: ${err.message}` });
    }
    if (err instanceof AppError) return sendProblem(res, err.code, err.message, err.errors);
    if (err instanceof ToolError) {
      const problem = toolErrorProblem(err);
      return sendProblem(res, problem.code, problem.message, problem.errors);
    }
    if (err instanceof ValidateError) {
      const route = (req.route as { path?: unknown } | undefined)?.path;
      const errors = parameterErrors.fieldErrors(err, req.method, typeof route === 'string' ? route : undefined);
      return sendProblem(res, 'validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);
    }
    const bodyError = err as { type?: unknown; status?: unknown; expose?: unknown; body?: unknown };
    if (bodyError.type === 'request.aborted') {
      // The client went away mid-body: nobody to answer, nothing wrong with the service.
      logger.debug({ reqId: req.id }, 'client aborted the request body');
      return;
    }
    // http-errors (the body parser's) mark errors safe to tell the client with `expose`.
    if (bodyError.expose === true && typeof bodyError.status === 'number') {
      const type = typeof bodyError.type === 'string' ? bodyError.type : '';
      if (bodyParserProblem(res, type, bodyError.status, bodyError.body)) return;
    }
    // src/db translates every driver error it raises: unavailability is the domain's UnavailableError.
    const unavailable = unavailableCause(err);
    if (unavailable) {
      // The database's, or the identity provider's JWKS: the error's own message says which.
      const what = unavailable.message;
      logger.warn({ err, reqId: req.id }, what);
      return sendProblem(res, 'unavailable', `${what}; retry later`);
    }
    logger.error({ err, reqId: req.id }, 'unhandled error');
    return sendProblem(res, 'internal', 'Internal server error');
  };
}
