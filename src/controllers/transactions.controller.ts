import { Body, Controller, Example, Path, Post, Request, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import { type Problem, PROBLEM_JSON } from '../http/problem';
import type { Services } from '../services';
import type { TransactionResult } from './responses';
import type { Id } from './types';
import { forbiddenExample, unauthorizedExample, unsupportedMediaTypeExample } from './examples/problems';
import {
  transactionConflictExample,
  transactionInvalidExample,
  transactionNotFoundExample,
  transactionPreconditionExample,
  transactionResultExample,
  transactionTooLargeExample,
} from './examples/transactions';

/**
 * One operation of a transaction. `create` takes `data` (and `ttlSeconds`);
 * `update` takes `data`, `ifMatch` and `ttlSeconds`; `delete` and `check`
 * take `ifMatch`. Any other field is refused (400).
 */
export interface TransactionOperationBody {
  /** `check` only asserts that the resource exists (at `ifMatch`) and writes nothing. */
  op: 'create' | 'update' | 'delete' | 'check';
  name: Id;
  /**
   * create, update: the whole new data, any JSON value the database can store;
   * its JSON text must fit RESOURCE_MAX_BYTES.
   */
  data?: unknown;
  /**
   * update, delete, check: the version the resource must be at (412 otherwise).
   * @isInt must be an integer version, at least 1
   * @minimum 1 must be an integer version, at least 1
   */
  ifMatch?: number;
  /**
   * create, update: seconds until the written resource expires (`expiresAt`, by
   * the database's clock; 1 to 31,536,000), as with PUT. Absent: the written
   * resource does not expire (an update clears a previous expiry).
   * @isInt must be an integer from 1 to 31536000
   * @minimum 1 must be an integer from 1 to 31536000
   * @maximum 31536000 must be an integer from 1 to 31536000
   */
  ttlSeconds?: number;
}

export interface TransactionBody {
  /**
   * Applied in order, all committed together or none.
   * @minItems 1 must hold 1 to 100 operations
   * @maxItems 100 must hold 1 to 100 operations
   */
  operations: TransactionOperationBody[];
}

@Route('conversations/{id}/transactions')
@Tags('Resources')
export class TransactionsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Applies 1 to 100 operations on the conversation's resources in one
   * database transaction, as `client`: all commit or none does. The first
   * failing operation answers with its usual status and
   * `errors: [{ path: "/operations/K", message }]`, and nothing is written:
   * 409 conflict (create of an existing name), 404 not_found (a missing one),
   * 412 precondition_failed (a stale `ifMatch`), 413 payload_too_large
   * (`data` over RESOURCE_MAX_BYTES), 400 validation_failed (a malformed
   * operation). Every resource named is locked first, in name order, so
   * concurrent transactions over the same resources wait for each other. The
   * conversation is created on first use (as PUT). One audit entry
   * (`resources.transaction`) per committed transaction lists each
   * operation's `op:name@version`, never the data.
   * @summary Apply operations all together or not at all
   * @example body {"operations": [{"op": "update", "name": "order-17", "data": {"status": "paid", "amount": 120}, "ifMatch": 3}, {"op": "update", "name": "stock-widget", "data": {"count": 41}, "ifMatch": 8}, {"op": "delete", "name": "cart-17"}]}
   */
  @Post()
  @SuccessResponse(200, 'Committed')
  @Example<TransactionResult>(transactionResultExample)
  @Response<Problem>(400, 'Malformed body or operation', transactionInvalidExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'An agent may only read resources', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'An operation names a missing resource (errors names it); or a conversation the caller may not see',
    transactionNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(409, 'A create of an existing resource', transactionConflictExample, PROBLEM_JSON)
  @Response<Problem>(412, 'An ifMatch that is not the current version', transactionPreconditionExample, PROBLEM_JSON)
  @Response<Problem>(
    413,
    'An operation’s data is larger than RESOURCE_MAX_BYTES (or the body than BODY_LIMIT)',
    transactionTooLargeExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async applyTransaction(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Body() body: TransactionBody,
  ): Promise<TransactionResult> {
    const results = await this.services.transactions.applyAs(principalOf(req), {
      conversationId: id,
      operations: body.operations,
      requestId: req.id ?? '-',
    });
    return { results };
  }
}
