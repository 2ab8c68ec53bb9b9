import { Body, Controller, Path, Post, Request, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { NegotiationResult } from '../core/negotiation';
import { negotiationStatus } from '../http/negotiate-status';
import type { Id, JsonObject } from './types';

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
  /** Route and decide permissions, but execute nothing. */
  dryRun?: boolean;
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
   */
  @Post('{conversationId}/negotiate')
  @SuccessResponse(200, 'The action ran (or, with dryRun, would run)')
  @Response<NegotiationResult>(
    400,
    'invalid_args: args fail the action input schema, hold NUL, lone surrogates or nesting over 64 levels, or a bad upgrade level',
  )
  @Response<Problem>(400, 'Malformed request (validation_failed, problem+json)')
  @Response<Problem>(401, 'No valid bearer token (problem+json)')
  @Response<NegotiationResult>(
    403,
    "permission_required (requiresApproval; also an agent's upgrade:), denied by policy (contradiction), or level_ceiling (above an agent key's maxLevel)",
  )
  @Response<NegotiationResult>(404, 'no_tool, unknown_tool or resource_not_found')
  @Response<Problem>(404, 'A conversation the caller may not see (not_found, problem+json)')
  @Response<NegotiationResult>(409, 'ambiguous_action or resource_exists')
  @Response<NegotiationResult>(413, 'resource_too_large')
  @Response<NegotiationResult>(500, 'tool_error: the tool threw')
  @Response<Problem>(415, 'Unsupported Content-Encoding or charset (problem+json)')
  @Response<Problem>(503, 'Database unreachable (unavailable, problem+json)')
  public async negotiate(
    @Request() req: ExRequest,
    @Path() conversationId: Id,
    @Body() body: NegotiateBody,
  ): Promise<NegotiationResult> {
    const result = await this.services.manager.negotiate(principalOf(req), conversationId, body, {
      requestId: req.id ?? '-',
    });
    this.setStatus(negotiationStatus(result));
    return result;
  }
}
