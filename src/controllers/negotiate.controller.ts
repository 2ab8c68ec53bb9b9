import {
  Body,
  Controller,
  Example,
  Header,
  Path,
  Post,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import { noteNegotiation } from '../http/middleware';
import { PROBLEM_JSON, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { NegotiationResult } from '../core/negotiation';
import { negotiationStatus } from '../http/negotiate-status';
import { grantedWait } from '../http/prefer';
import type { HoldRequest } from '../core/held-calls';
import type { Id, IdempotencyKey, JsonObject } from './types';
import {
  ambiguousActionExample,
  deniedExample,
  dependencyUnmetExample,
  invalidArgsExample,
  negotiatedDryRunExample,
  negotiatedExample,
  noToolExample,
  participantUnavailableExample,
  permissionRequiredExample,
  resourceExistsExample,
  resourceNotFoundOutcomeExample,
  resourceTooLargeExample,
  toolDefinitionChangedExample,
  toolErrorExample,
  unknownToolExample,
} from './examples/negotiation';
import {
  bodyValidationFailedExample,
  conversationNotFoundExample,
  idempotencyInFlightExample,
  idempotencyKeyReusedExample,
  payloadTooLargeExample,
  unauthorizedExample,
  unavailableExample,
  unsupportedMediaTypeExample,
} from './examples/problems';

/**
 * A status answered either as a NegotiationResult (application/json) or as a
 * problem (application/problem+json). tsoa gives a status one schema for all
 * its media types: scripts/openapi-finish.mjs splits these into one schema and
 * its own examples per media type.
 */
const NEGOTIATE_OR_PROBLEM = ['application/json', PROBLEM_JSON];

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
   * @pattern ^[A-Za-z0-9:_-]{1,128}$ must be 1 to 128 characters of A-Z a-z 0-9 : _ -
   */
  approvalId?: string;
  /**
   * A resource name (1 to 128 characters of A-Z a-z 0-9 : _ -; another is 400 invalid_args):
   * the call's result is written there in the conversation's shared context,
   * created or updated by the tool, in the same transaction as the call's
   * audit entry. For a participant's MCP action the result is its
   * `structuredContent`, else the text of its content; for an OpenAPI one its
   * body; for a bundled action its output. Saving is a write: the tool's level
   * must be 2 or more (else 403 permission_required, whose approval covers
   * the call with this very name).
   */
  saveAs?: string;
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
   * (routing, policy, permission, args, dependencies, dry runs), special actions, a
   * failed action (its writes rolled back: 4xx from the tool, 500
   * tool_error) and 503s are not kept: a retry with the key runs afresh.
   * A participant's action (a remote tool) keeps whatever its upstream
   * answered, tool_error included (it cannot be rolled back); only 503
   * participant_unavailable (the upstream was never reached) is not kept.
   *
   * With `Prefer: wait=N` (RFC 7240; N seconds, at most
   * APPROVAL_MAX_WAIT_SECONDS, larger is clamped), a call that would be
   * refused 403 permission_required is held until its approval request is
   * decided or N passes: approved (once or for the conversation), it runs as
   * its retry with the approvalId would and answers 200 (a `once` approval is
   * then used); rejected, 403 approval_rejected with the reason; still
   * pending, the 403 permission_required. A held answer says
   * `Preference-Applied: wait=N`. With an Idempotency-Key, a held call that
   * ran keeps its outcome for the body sent (a repeat replays it).
   * @param idempotencyKey 1 to 255 visible ASCII characters, unique per request you mean to make once.
   * @param prefer `wait=N` (RFC 7240): hold a call needing approval up to N seconds; other preferences and a malformed one are ignored.
   * @example body.create {"action": "create-resource", "args": {"name": "notes", "data": {"text": "hello"}}}
   * @example body.explicitTool {"action": "add", "tool": "calculator", "args": {"a": 2, "b": 3}}
   * @example body.dryRun {"action": "read-resource", "args": {"name": "notes"}, "dryRun": true}
   * @example body.upgrade {"action": "upgrade:data-tool:level-2"}
   * @example body.listTools {"action": "list-tools"}
   * @example body.retryWithApproval {"action": "create-resource", "args": {"name": "notes", "data": {"text": "hello"}}, "approvalId": "apr_A2k3sjj3kmXySulM"}
   * @example body.saveAs {"action": "everything/echo", "args": {"message": "hello"}, "saveAs": "greeting"}
   * @summary Route, authorize and run an action
   */
  @Post('{conversationId}/negotiate')
  // Per status, tsoa takes the description of the last @Response and the
  // examples of all of them, in order.
  @SuccessResponse<{
    /** `true` when this answer is the kept outcome of an earlier request with the same Idempotency-Key. */
    'Idempotent-Replayed'?: string;
    /** `wait=N`: the call was held (Prefer: wait) up to N seconds. */
    'Preference-Applied'?: string;
  }>(200, 'The action ran (or, with dryRun, would run)')
  @Example<NegotiationResult>(negotiatedExample, 'success')
  @Example<NegotiationResult>(negotiatedDryRunExample, 'dryRun')
  @Response<NegotiationResult | Problem>(400, '', invalidArgsExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(
    400,
    'invalid_args (NegotiationResult): args fail the action input schema, hold NUL, lone surrogates or nesting over 64 levels, or a bad upgrade level; validation_failed (problem+json): a malformed request or Idempotency-Key',
    bodyValidationFailedExample,
    NEGOTIATE_OR_PROBLEM,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<NegotiationResult>(403, '', permissionRequiredExample)
  @Response<
    NegotiationResult,
    { /** `wait=N`: the call was held (Prefer: wait) up to N seconds. */ 'Preference-Applied'?: string }
  >(
    403,
    "permission_required (requiresApproval, with the approval request; also an agent's upgrade:), denied by policy (contradiction), level_ceiling (above an agent key's maxLevel, no approval), approval_expired, or approval_rejected (error gives the reason)",
    deniedExample,
  )
  @Response<NegotiationResult | Problem>(404, '', noToolExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(404, '', unknownToolExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(404, '', resourceNotFoundOutcomeExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(
    404,
    'no_tool, unknown_tool, resource_not_found or approval_not_found (NegotiationResult); a conversation the caller may not see (not_found, problem+json)',
    conversationNotFoundExample,
    NEGOTIATE_OR_PROBLEM,
  )
  @Response<NegotiationResult | Problem>(409, '', ambiguousActionExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(409, '', resourceExistsExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(409, '', toolDefinitionChangedExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(409, '', dependencyUnmetExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(
    409,
    "ambiguous_action, resource_exists, approval_mismatch (the approval is for another call), approval_used, tool_definition_changed (a participant's action whose definition changed upstream, awaiting an admin's approval) or dependency_unmet (the action's declared requires not met: output.missing names each resource and its producers) (NegotiationResult); a request with this Idempotency-Key still running (conflict, problem+json)",
    idempotencyInFlightExample,
    NEGOTIATE_OR_PROBLEM,
  )
  @Response<NegotiationResult | Problem>(413, '', resourceTooLargeExample, NEGOTIATE_OR_PROBLEM)
  @Response<NegotiationResult | Problem>(
    413,
    'resource_too_large (NegotiationResult): resource data over RESOURCE_MAX_BYTES; payload_too_large (problem+json): a body over BODY_LIMIT',
    payloadTooLargeExample,
    NEGOTIATE_OR_PROBLEM,
  )
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(
    422,
    'This Idempotency-Key was used with another body (idempotency_key_reused)',
    idempotencyKeyReusedExample,
    PROBLEM_JSON,
  )
  @Response<NegotiationResult>(500, 'tool_error: the tool threw (details only in the log)', toolErrorExample)
  @Response<NegotiationResult | Problem>(503, '', participantUnavailableExample, NEGOTIATE_OR_PROBLEM)
  @Response<
    NegotiationResult | Problem,
    { /** Seconds until a retry may succeed (participant_unavailable). */ 'Retry-After'?: string }
  >(
    503,
    "participant_unavailable (NegotiationResult, with Retry-After): a participant's upstream cannot be reached or its circuit is open, nothing ran; database unreachable (unavailable, problem+json)",
    unavailableExample,
    NEGOTIATE_OR_PROBLEM,
  )
  public async negotiate(
    @Request() req: ExRequest,
    @Path() conversationId: Id,
    @Body() body: NegotiateBody,
    @Header('Idempotency-Key') idempotencyKey?: IdempotencyKey,
    @Header('Prefer') prefer?: string,
  ): Promise<NegotiationResult> {
    const meta = { requestId: req.id ?? '-' };
    const wait = prefer === undefined ? undefined : grantedWait(prefer, this.services.config.approvalMaxWaitSeconds);
    if (wait !== undefined && wait > 0) return this.held(req, { conversationId, body, idempotencyKey }, wait);
    if (idempotencyKey === undefined) {
      const result = await this.services.manager.negotiate(principalOf(req), conversationId, body, { meta });
      noteNegotiation(req, result);
      this.answer(result, negotiationStatus(result));
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
    this.answer(kept.body, kept.status);
    return kept.body;
  }

  /**
   * negotiate held (Prefer: wait): run, and on a refusal needing approval
   * waited on until decided, `seconds` pass or the client goes away.
   */
  private async held(
    req: ExRequest,
    call: { conversationId: string; body: NegotiateBody; idempotencyKey: string | undefined },
    seconds: number,
  ): Promise<NegotiationResult> {
    const { conversationId, body, idempotencyKey } = call;
    const p = principalOf(req);
    const meta = { requestId: req.id ?? '-' };
    const gone = new AbortController();
    const res = req.res;
    const onClose = (): void => {
      if (!res?.writableEnded) gone.abort();
    };
    res?.once('close', onClose);
    const hold: HoldRequest = { seconds, signal: gone.signal };
    let status: number | undefined;
    let replayed = false;
    try {
      const { result, held } = await this.services.held.negotiate({ p, conversationId, req: body }, hold, async (r) => {
        if (idempotencyKey === undefined) {
          const result = await this.services.manager.negotiate(p, conversationId, r, { meta });
          status = negotiationStatus(result);
          return result;
        }
        const sentAs = r === body ? undefined : body;
        const kept = await this.services.idempotency.negotiate(p, conversationId, r, idempotencyKey, {
          ...meta,
          ...(sentAs ? { sentAs } : {}),
        });
        status = kept.status;
        replayed = kept.replayed;
        return kept.body;
      });
      noteNegotiation(req, result);
      if (replayed) this.setHeader('Idempotent-Replayed', 'true');
      if (held) this.setHeader('Preference-Applied', `wait=${seconds}`);
      this.answer(result, status ?? negotiationStatus(result));
      return result;
    } finally {
      res?.off('close', onClose);
    }
  }

  /** The status, and for participant_unavailable the Retry-After header (seconds). */
  private answer(result: NegotiationResult, status: number): void {
    this.setStatus(status);
    if (result.retryAfterSeconds !== undefined) this.setHeader('Retry-After', String(result.retryAfterSeconds));
  }
}
