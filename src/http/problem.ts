/**
 * One error type with a machine-readable code, and the one place that maps
 * codes to HTTP statuses and RFC 9457 problem+json bodies.
 */
export type ProblemCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'internal'
  | 'unavailable';

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
};

export interface FieldError {
  path: string;
  message: string;
}

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

export class AppError extends Error {
  constructor(
    public readonly code: ProblemCode,
    message: string,
    public readonly errors?: FieldError[],
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return PROBLEM_STATUS[this.code];
  }
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
