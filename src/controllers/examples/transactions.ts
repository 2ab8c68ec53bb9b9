// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
import type { Problem } from '../../http/problem';
import type { TransactionResult } from '../responses';

const REQUEST_ID = '3f8e2a5c-9d41-4b7e-8a16-2c5d0e9b7f30';

export const transactionResultExample: TransactionResult = {
  results: [
    {
      name: 'order-17',
      data: { status: 'paid', amount: 120 },
      createdBy: 'client',
      updatedBy: 'client',
      createdAt: 1795361868918,
      updatedAt: 1795361902114,
      version: 4,
    },
    {
      name: 'stock-widget',
      data: { count: 41 },
      createdBy: 'client',
      updatedBy: 'client',
      createdAt: 1795361868918,
      updatedAt: 1795361902114,
      version: 9,
    },
    null,
  ],
};
export const transactionPreconditionExample: Problem = {
  type: 'urn:problem:precondition_failed',
  title: 'Precondition failed',
  status: 412,
  detail: 'operations/1: Resource stock-widget is at version 9, not 8',
  code: 'precondition_failed',
  errors: [{ path: '/operations/1', message: 'Resource stock-widget is at version 9, not 8' }],
  requestId: REQUEST_ID,
};
export const transactionConflictExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'operations/0: Resource already exists: order-17',
  code: 'conflict',
  errors: [{ path: '/operations/0', message: 'Resource already exists: order-17' }],
  requestId: REQUEST_ID,
};
export const transactionNotFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'operations/2: Resource not found: cart-17',
  code: 'not_found',
  errors: [{ path: '/operations/2', message: 'Resource not found: cart-17' }],
  requestId: REQUEST_ID,
};
export const transactionTooLargeExample: Problem = {
  type: 'urn:problem:payload_too_large',
  title: 'Payload too large',
  status: 413,
  detail: 'operations/0: Resource data is 300000 bytes; the limit is 262144 bytes (RESOURCE_MAX_BYTES)',
  code: 'payload_too_large',
  errors: [
    { path: '/operations/0', message: 'Resource data is 300000 bytes; the limit is 262144 bytes (RESOURCE_MAX_BYTES)' },
  ],
  requestId: REQUEST_ID,
};
export const transactionInvalidExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: 'operations/0: data: Required: the resource data (any JSON value)',
  code: 'validation_failed',
  errors: [{ path: '/operations/0', message: 'data: Required: the resource data (any JSON value)' }],
  requestId: REQUEST_ID,
};
