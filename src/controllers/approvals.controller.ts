import { Body, Controller, Example, Get, Path, Post, Query, Request, Response, Route, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { ApprovalList, ApprovalStatusValue, ApprovalView } from './responses';
import type { Id } from './types';
import { PROBLEM_JSON } from '../http/problem';
import { approvalListExample, approvedExample, pendingApprovalExample, rejectedExample } from './examples/approvals';
import {
  approvalConflictExample,
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  unsupportedMediaTypeExample,
  validationFailedExample,
} from './examples/problems';

export interface ApproveBody {
  /** once: that exact call may run once (the retry carries approvalId); conversation: the tool's level is raised. */
  scope: 'once' | 'conversation';
  /**
   * conversation: the raised level returns to the previous one after this many seconds (absent: it stays).
   * once: the retry must come within this (absent: APPROVAL_TTL_SECONDS).
   * @isInt must be an integer from 1 to 31536000
   * @minimum 1 must be an integer from 1 to 31536000
   * @maximum 31536000 must be an integer from 1 to 31536000
   */
  expiresInSeconds?: number;
}

export interface RejectBody {
  /**
   * Shown to the caller whose retry is refused (approval_rejected).
   * @maxLength 1000
   */
  reason?: string;
}

@Route('conversations/{id}/approvals')
@Tags('Approvals')
export class ApprovalsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The conversation's approval requests, newest first (owner, admin).
   * @summary List a conversation's approval requests
   */
  @Get()
  @Example<ApprovalList>(approvalListExample)
  @Response<Problem>(400, 'Malformed URL, an invalid id or an unknown status', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not list approvals', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async listApprovals(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Query() status?: ApprovalStatusValue,
  ): Promise<ApprovalList> {
    return { approvals: await this.services.approvals.list(principalOf(req), id, status) };
  }

  /**
   * One approval (owner, admin, and the agent whose call it was).
   * @summary Read one approval request
   */
  @Get('{approvalId}')
  @Example<ApprovalView>(pendingApprovalExample)
  @Response<Problem>(400, 'Malformed URL or an invalid id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, "An agent reading another principal's approval", forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such approval or conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getApproval(@Request() req: ExRequest, @Path() id: Id, @Path() approvalId: Id): Promise<ApprovalView> {
    return this.services.approvals.get(principalOf(req), id, approvalId);
  }

  /**
   * Approves a pending request (owner, admin; never an agent).
   * @summary Approve a pending request
   * @example body {"scope": "once"}
   */
  @Post('{approvalId}/approve')
  @Example<ApprovalView>(approvedExample)
  @Response<Problem>(400, 'Bad scope or expiresInSeconds', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents never approve', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such approval or conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(409, 'The approval is not pending (conflict)', approvalConflictExample, PROBLEM_JSON)
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async approve(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Path() approvalId: Id,
    @Body() body: ApproveBody,
  ): Promise<ApprovalView> {
    return this.services.approvals.approve(principalOf(req), id, approvalId, body, req.id ?? '-');
  }

  /**
   * Rejects a pending request (owner, admin; never an agent); a retry then answers approval_rejected with the reason.
   * @summary Reject a pending request
   * @example body {"reason": "Notes are kept in the wiki"}
   */
  @Post('{approvalId}/reject')
  @Example<ApprovalView>(rejectedExample)
  @Response<Problem>(400, 'Bad reason', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents never reject', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such approval or conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(409, 'The approval is not pending (conflict)', approvalConflictExample, PROBLEM_JSON)
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async reject(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Path() approvalId: Id,
    // `{ reason? }`: no body at all is a rejection without a reason.
    @Body() body?: RejectBody,
  ): Promise<ApprovalView> {
    return this.services.approvals.reject(principalOf(req), id, approvalId, body?.reason, req.id ?? '-');
  }
}
