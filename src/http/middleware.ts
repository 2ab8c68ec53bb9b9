import { randomUUID } from 'node:crypto';
import { ValidateError } from '@tsoa/runtime';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { pinoHttp } from 'pino-http';
import { isDatabaseUnavailable } from '../db/database';
import type { Logger } from '../logger';
import { AppError, type FieldError, type ProblemCode, problemOf } from './problem';

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export function sendProblem(res: Response, code: ProblemCode, detail: string, errors?: FieldError[]): void {
  const requestId = res.getHeader('X-Request-Id');
  const problem = problemOf(code, detail, errors, typeof requestId === 'string' ? requestId : undefined);
  res.status(problem.status).type('application/problem+json').json(problem);
}

/** Takes a well-formed X-Request-Id or makes one, returns it, and logs each request with it. */
export function requestLogging(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req, res) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customLogLevel: (_req, res, err) =>
      err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    serializers: {
      req: (req: { id: unknown; method: unknown; url: unknown }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: unknown }) => ({ statusCode: res.statusCode }),
    },
  });
}

export const notFound: RequestHandler = (req, res) => {
  sendProblem(res, 'not_found', `No route for ${req.method} ${req.path}`);
};

/** tsoa's "fields" ({"body.level": {message}}) as [{path, message}]. */
function fieldErrors(err: ValidateError): FieldError[] {
  return Object.entries(err.fields).map(([path, f]) => ({
    path: path.replace(/^(requestBody|body)\.?/, '') || 'body',
    message: f.message,
  }));
}

/**
 * The one place errors become HTTP responses. Anything not known is a 500,
 * logged in full and answered generically: no stack or SQL leaves the service.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) return next(err);
    if (err instanceof AppError) return sendProblem(res, err.code, err.message, err.errors);
    if (err instanceof ValidateError) {
      const errors = fieldErrors(err);
      return sendProblem(res, 'validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);
    }
    const bodyError = err as { type?: unknown; status?: unknown };
    if (bodyError.type === 'entity.too.large')
      return sendProblem(res, 'payload_too_large', 'Request body is larger than BODY_LIMIT');
    if (bodyError.type === 'entity.parse.failed')
      return sendProblem(res, 'validation_failed', 'Request body is not valid JSON');
    if (typeof bodyError.type === 'string' && bodyError.status === 415) {
      return sendProblem(res, 'validation_failed', 'Unsupported request body encoding');
    }
    if (isDatabaseUnavailable(err)) {
      logger.warn({ err, reqId: req.id }, 'database unavailable');
      return sendProblem(res, 'unavailable', 'The database is unavailable; retry later');
    }
    logger.error({ err, reqId: req.id }, 'unhandled error');
    return sendProblem(res, 'internal', 'Internal server error');
  };
}
