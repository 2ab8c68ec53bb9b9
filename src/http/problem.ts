/**
 * The one place that maps the domain's error codes (src/core/errors.ts) to
 * HTTP statuses and RFC 9457 problem+json bodies.
 */
import { AppError, type ErrorCode, type FieldError } from '../core/errors';
import type { ToolError } from '../core/tool-interface';
import { NEGOTIATION_STATUS } from './negotiate-status';

export { AppError, type FieldError } from '../core/errors';

/** The domain's error codes are this API's problem codes. */
export type ProblemCode = ErrorCode;

export const PROBLEM_STATUS: Record<ProblemCode, number> = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  query_too_expensive: 400,
};

const TITLES: Record<ProblemCode, string> = {
  validation_failed: 'Validation failed',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  precondition_failed: 'Precondition failed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  idempotency_key_reused: 'Idempotency key reused',
  rate_limited: 'Too many requests',
  internal: 'Internal server error',
  unavailable: 'Service unavailable',
  query_too_expensive: 'Query too expensive',
};

/** RFC 9457 problem details, as every error of this API except negotiate's outcomes. */
export interface Problem {
  /** A URI reference naming the problem type. */
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  /** Present on validation failures. */
  errors?: FieldError[];
  /** The request id, also in the X-Request-Id header. */
  requestId?: string;
}

export function problemOf(code: ProblemCode, detail: string, errors?: FieldError[], requestId?: string): Problem {
  return {
    type: `urn:problem:${code}`,
    title: TITLES[code],
    status: PROBLEM_STATUS[code],
    detail,
    code,
    ...(errors ? { errors } : {}),
    ...(requestId ? { requestId } : {}),
  };
}

/**
 * A tool error (the resource rules' refusals: too large, invalid) that
 * reaches a REST endpoint, as the problem with the status negotiate answers
 * for that code (NEGOTIATION_STATUS): one table decides both. An
 * `invalid_args` message names its field first (`data: Required`).
 */
export function toolErrorProblem(err: ToolError): AppError {
  const status = NEGOTIATION_STATUS[err.code];
  const code = (Object.keys(PROBLEM_STATUS) as ProblemCode[]).find((c) => PROBLEM_STATUS[c] === status) ?? 'internal';
  // A transaction's failing operation: its JSON pointer in the body (API.md, Transactions).
  if (err.index !== undefined) {
    const message = err.message.replace(/^operations\/\d+: /, '');
    return new AppError(code, err.message, [{ path: `/operations/${err.index}`, message }]);
  }
  if (code !== 'validation_failed') return new AppError(code, err.message);
  const field = /^([^\s:]+): /.exec(err.message)?.[1];
  return new AppError(code, err.message, field !== undefined ? [{ path: field, message: err.message }] : undefined);
}

/** One field's validation failure: `path: message` as the detail, and the field in `errors`. */
export function fieldProblem(path: string, message: string): AppError {
  return new AppError('validation_failed', `${path}: ${message}`, [{ path, message }]);
}

/** The media type of every Problem this API sends (sendProblem in ./middleware). */
export const PROBLEM_JSON = 'application/problem+json';
