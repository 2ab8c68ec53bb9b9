// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
// Problems (application/problem+json), one per code.
import type { Problem } from '../../http/problem';

const REQUEST_ID = '3f8e2a5c-9d41-4b7e-8a16-2c5d0e9b7f30';

export const validationFailedExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: 'format: must be one of openai, anthropic, mcp, canonical',
  code: 'validation_failed',
  errors: [{ path: 'format', message: 'must be one of openai, anthropic, mcp, canonical' }],
  requestId: REQUEST_ID,
};
export const bodyValidationFailedExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: "action: 'action' is required",
  code: 'validation_failed',
  errors: [{ path: 'action', message: "'action' is required" }],
  requestId: REQUEST_ID,
};
export const badUrlExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: 'path: has malformed percent-encoding',
  code: 'validation_failed',
  errors: [{ path: 'path', message: 'has malformed percent-encoding' }],
  requestId: REQUEST_ID,
};
export const unauthorizedExample: Problem = {
  type: 'urn:problem:unauthorized',
  title: 'Unauthorized',
  status: 401,
  detail: 'This endpoint needs Authorization: Bearer TOKEN',
  code: 'unauthorized',
  requestId: REQUEST_ID,
};
export const forbiddenExample: Problem = {
  type: 'urn:problem:forbidden',
  title: 'Forbidden',
  status: 403,
  detail: 'A principal with role user may not mint keys (only admins may)',
  code: 'forbidden',
  requestId: REQUEST_ID,
};
export const conversationNotFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Conversation not found: support-42',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const resourceNotFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Resource not found: notes',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const notFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Tool not found: weather-tool',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const conflictExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'Conversation already exists: support-42',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const idempotencyInFlightExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'A request with this Idempotency-Key is still running; retry later to get its outcome',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const approvalConflictExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'Approval apr_A2k3sjj3kmXySulM is not pending: only a pending request can be approved or rejected',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const preconditionFailedExample: Problem = {
  type: 'urn:problem:precondition_failed',
  title: 'Precondition failed',
  status: 412,
  detail: 'Resource version is 3, If-Match asked for "2"',
  code: 'precondition_failed',
  requestId: REQUEST_ID,
};
export const payloadTooLargeExample: Problem = {
  type: 'urn:problem:payload_too_large',
  title: 'Payload too large',
  status: 413,
  detail: 'Request body is larger than BODY_LIMIT',
  code: 'payload_too_large',
  requestId: REQUEST_ID,
};
export const unsupportedMediaTypeExample: Problem = {
  type: 'urn:problem:unsupported_media_type',
  title: 'Unsupported media type',
  status: 415,
  detail: 'Unsupported charset; send UTF-8',
  code: 'unsupported_media_type',
  requestId: REQUEST_ID,
};
export const idempotencyKeyReusedExample: Problem = {
  type: 'urn:problem:idempotency_key_reused',
  title: 'Idempotency key reused',
  status: 422,
  detail: 'This Idempotency-Key was used with another request body',
  code: 'idempotency_key_reused',
  requestId: REQUEST_ID,
};
export const unavailableExample: Problem = {
  type: 'urn:problem:unavailable',
  title: 'Service unavailable',
  status: 503,
  detail: 'The database is unavailable; retry later',
  code: 'unavailable',
  requestId: REQUEST_ID,
};
