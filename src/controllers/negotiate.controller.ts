import { Body, Controller, Header, Path, Post, Request, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import { noteNegotiation } from '../http/middleware';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { NegotiationResult } from '../core/negotiation';
import { negotiationStatus } from '../http/negotiate-status';
import type { Id, IdempotencyKey, JsonObject } from './types';

export interface NegotiateBody {
  /**
   * Bare (`create-resource`, routed by capability), canonical
   * (`data-tool/create-resource`) or provider-safe (`data-tool_create-resource`);
   * or a special action: `list-tools`, `upgrade:TOOL:level-N`.
   * @minLength 1
   * @maxLength 512
   */
  action: string;
  /** The action's arguments (see the action's inputSchema). */
  args?: JsonObject;
  /**
   * Explicit tool override (the seed's `explicitTool`): route within this tool only.
   * @minLength 1
   * @maxLength 64
   */
  tool?: string;
  /** Route and decide permissions, but execute nothing (and record no approval request). */
  dryRun?: boolean;
  /**
   * Retry of a refused call under this approval (same action and args): a `once` approval lets it run once.
   * @pattern ^[A-Za-z0-9:_-]{1,128}$
   */
  approvalId?: string;
}

@Route('conversations')
@Tags('Negotiate')
export class NegotiateController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Routes an action to the tool that can do it, checks that tool's permission
   * level in this conversation and the conversation's policy, and runs it.
   * A conversation id never seen before is created on first use, owned by the
   * caller (users and admins; an agent acts only in its own conversation).
   *
   * With `Idempotency-Key`, an action runs at most once per conversation,
   * caller and key: the outcome of an action that ran and committed (200) is
   * kept for 24 hours, in the action's own transaction; a repeat with the
   * same body gets it back with `Idempotent-Replayed: true` and runs nothing;
   * another body is 422 `idempotency_key_reused`; a repeat while the first
   * still runs is 409 `conflict`. Refusals decided before anything ran
   * (routing, policy, permission, args, dry runs), special actions, a
   * failed action (its writes rolled back: 4xx from the tool, 500
   * tool_error) and 503s are not kept: a retry with the key runs afresh.
   * @param idempotencyKey 1 to 255 visible ASCII characters, unique per request you mean to make once.
   */
  @Post('{conversationId}/negotiate')
  @SuccessResponse<{
    /** `true` when this answer is the kept outcome of an earlier request with the same Idempotency-Key. */
    'Idempotent-Replayed'?: string;
  }>(200, 'The action ran (or, with dryRun, would run)')
  @Response<NegotiationResult>(
    400,
    'invalid_args: args fail the action input schema, hold NUL, lone surrogates or nesting over 64 levels, or a bad upgrade level',
  )
  @Response<Problem>(400, 'Malformed request or Idempotency-Key (validation_failed, problem+json)')
  @Response<Problem>(401, 'No valid bearer token (problem+json)')
  @Response<NegotiationResult>(
    403,
    "permission_required (requiresApproval, with the approval request; also an agent's upgrade:), denied by policy (contradiction), level_ceiling (above an agent key's maxLevel, no approval), approval_expired, or approval_rejected (error gives the reason)",
  )
  @Response<NegotiationResult>(404, 'no_tool, unknown_tool, resource_not_found or approval_not_found')
  @Response<Problem>(404, 'A conversation the caller may not see (not_found, problem+json)')
  @Response<NegotiationResult>(
    409,
    'ambiguous_action, resource_exists, approval_mismatch (the approval is for another call) or approval_used; or, as problem+json conflict, a request with this Idempotency-Key still running',
  )
  @Response<Problem>(422, 'This Idempotency-Key was used with another body (idempotency_key_reused, problem+json)')
  @Response<NegotiationResult>(413, 'resource_too_large')
  @Response<NegotiationResult>(500, 'tool_error: the tool threw')
  @Response<Problem>(415, 'Unsupported Content-Encoding or charset (problem+json)')
  @Response<Problem>(503, 'Database unreachable (unavailable, problem+json)')
  public async negotiate(
    @Request() req: ExRequest,
    @Path() conversationId: Id,
    @Body() body: NegotiateBody,
    @Header('Idempotency-Key') idempotencyKey?: IdempotencyKey,
  ): Promise<NegotiationResult> {
    const meta = { requestId: req.id ?? '-' };
    if (idempotencyKey === undefined) {
      const result = await this.services.manager.negotiate(principalOf(req), conversationId, body, { meta });
      noteNegotiation(req, result);
      this.setStatus(negotiationStatus(result));
      return result;
    }
    const kept = await this.services.idempotency.negotiate(
      principalOf(req),
      conversationId,
      body,
      idempotencyKey,
      meta,
    );
    noteNegotiation(req, kept.body);
    if (kept.replayed) this.setHeader('Idempotent-Replayed', 'true');
    this.setStatus(kept.status);
    return kept.body;
  }
}
