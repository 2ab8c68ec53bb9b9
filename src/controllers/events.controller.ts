import { Controller, Example, Get, Header, Path, Produces, Query, Request, Response, Route, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { streamScope } from '../core/events';
import { principalOf } from '../http/authenticate';
import { eventStreamsOf, parseLastEventId } from '../http/event-stream';
import type { Problem } from '../http/problem';
import { PROBLEM_JSON } from '../http/problem';
import type { Services } from '../services';
import type { ApprovalInboxPage, ApprovalStatusValue, EventStream } from './responses';
import type { Cursor, EventId, Id } from './types';
import { eventStreamExample, inboxExample } from './examples/events';
import {
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  validationFailedExample,
} from './examples/problems';

/**
 * The approvals inbox and the event streams (API.md, "Approvals inbox, events
 * and webhooks"). The streams are Server-Sent Events written by
 * src/http/event-stream.ts once access is decided here: the handler then
 * sees the response started and leaves it alone; the return value only gives
 * the spec its type.
 */
@Route('')
@Tags('Events')
export class EventsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The approval requests of every conversation the caller owns (admins: of all conversations), newest first.
   * Agents have no inbox (403): they never decide approvals.
   * @summary The approvals inbox
   * @param status Only approvals in this status (a pending one past its expiry reads `expired`).
   * @param limit Page size, 1 to 500.
   * @isInt limit must be an integer from 1 to 500
   * @minimum limit 1 must be an integer from 1 to 500
   * @maximum limit 500 must be an integer from 1 to 500
   * @param cursor From the previous page's nextCursor.
   */
  @Get('approvals')
  @Example<ApprovalInboxPage>(inboxExample)
  @Response<Problem>(400, 'Bad status, limit or cursor', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents have no approvals inbox', forbiddenExample, PROBLEM_JSON)
  public async listInbox(
    @Request() req: ExRequest,
    @Query() status?: ApprovalStatusValue,
    @Query() limit: number = 100,
    @Query() cursor?: Cursor,
  ): Promise<ApprovalInboxPage> {
    return this.services.inbox.list(principalOf(req), {
      ...(status !== undefined ? { status } : {}),
      limit,
      ...(cursor !== undefined ? { cursor } : {}),
    });
  }

  /**
   * Server-Sent Events of every conversation the caller sees (users: the conversations they own; admins: all),
   * live, and after `Last-Event-ID` when given (events are kept EVENTS_RETENTION_HOURS). Types:
   * `approval.requested`, `approval.decided`, `approval.expired`, `permission.changed`, `resource.created`,
   * `resource.updated`, `resource.deleted`. Agents read their conversation's stream instead (403 here).
   * @summary Stream events of all conversations the caller sees
   * @param lastEventId The last event received: the stream resumes after it, on any replica.
   */
  @Get('events')
  @Produces('text/event-stream')
  @Example<EventStream>(eventStreamExample)
  @Response<Problem>(400, 'A Last-Event-ID that is no event id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents read their conversation’s stream only', forbiddenExample, PROBLEM_JSON)
  public async streamEvents(
    @Request() req: ExRequest,
    @Header('Last-Event-ID') lastEventId?: EventId,
  ): Promise<EventStream> {
    return this.stream(req, undefined, lastEventId);
  }

  /**
   * Server-Sent Events of one conversation, for whoever may see it (its owner, admins, its agent keys),
   * live and after `Last-Event-ID` when given; as `GET /events`.
   * @summary Stream one conversation's events
   * @param lastEventId The last event received: the stream resumes after it, on any replica.
   */
  @Get('conversations/{id}/events')
  @Produces('text/event-stream')
  @Example<EventStream>(eventStreamExample)
  @Response<Problem>(
    400,
    'An invalid id, or a Last-Event-ID that is no event id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async streamConversationEvents(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Header('Last-Event-ID') lastEventId?: EventId,
  ): Promise<EventStream> {
    return this.stream(req, id, lastEventId);
  }

  private async stream(req: ExRequest, conversationId: string | undefined, lastEventId?: string): Promise<string> {
    const after = parseLastEventId(lastEventId);
    const scope = await streamScope(this.services.access, principalOf(req), conversationId);
    await eventStreamsOf(this.services).serve(req, req.res!, scope, after);
    return '';
  }
}
