import { Controller, Get, OperationId, Path, Query, Request, Response, Route, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { Id } from './types';
import { PROBLEM_JSON } from '../http/problem';
import {
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  validationFailedExample,
} from './examples/problems';

/** A tool's subscription handler that did not complete for one event. */
export interface SubscriptionFailureView {
  /** The event's id (as GET /events gives it). */
  eventId: number;
  /** `resource.created`, `resource.updated`, `resource.deleted` or `resource.expired`. */
  type: string;
  /** The tool whose handler it was. */
  tool: string;
  /** The resource the event was about. */
  resource: string;
  /** `failed`: retried with backoff 5 times, then given up; `cut`: the chain of handlers was deeper than 8. */
  status: 'failed' | 'cut';
  /** Attempts made (0 for a cut one). */
  attempts: number;
  /** The last attempt's error code and message (`tool_error: …`, `depth_exceeded: …`). */
  error: string;
  /** Epoch milliseconds when it was given up. */
  at: number;
}

export interface SubscriptionFailureList {
  failures: SubscriptionFailureView[];
}

@Route('conversations')
@Tags('Events')
export class SubscriptionsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Tools' subscription handlers given up in the conversation (retried 5
   * times) or cut (a chain of handlers deeper than 8), newest first (owner,
   * admin). Kept 7 days.
   * @param limit At most this many, 1 to 500.
   * @isInt limit must be an integer from 1 to 500
   * @minimum limit 1 must be an integer from 1 to 500
   * @maximum limit 500 must be an integer from 1 to 500
   * @summary List a conversation's failed subscription handlers
   */
  @Get('{id}/subscriptions/failures')
  @OperationId('ListSubscriptionFailures')
  @Response<Problem>(400, 'Bad limit, or an invalid id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read them', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async failures(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Query() limit: number = 100,
  ): Promise<SubscriptionFailureList> {
    return { failures: await this.services.subscriptionFailures.list(principalOf(req), id, limit) };
  }
}
