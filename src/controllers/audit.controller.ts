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

/**
 * One audit entry. `hash` = SHA-256 hex of `prevHash` + the canonical JSON
 * (keys sorted recursively, no whitespace, absent fields left out) of the
 * entry without `hash`; the first entry's `prevHash` is 64 zeros.
 */
export interface AuditLogEntry {
  /** Global order of sealing; increasing within a conversation, not contiguous. */
  seq: number;
  /** Epoch milliseconds. */
  at: number;
  conversationId: string;
  /** `user:SUBJECT`, `admin:SUBJECT`, `agent:KEY_ID`. */
  actor: string;
  /**
   * `negotiate`, `negotiate.dry_run`, `permission.changed`, `key.created`,
   * `key.revoked`, `webhook.created`, `webhook.deleted` (a user's or admin's hook of all its
   * conversations: in `_system`), `conversation.created`, `conversation.deleted`,
   * `resources.transaction` (a committed POST …/transactions),
   * `approval.requested`, `approval.decided`; in `_system`, participants'
   * `participant.registered`, `participant.changed`, `participant.deleted`,
   * `participant.action_quarantined`, `participant.action_approved`,
   * `participant.credentials_set`, `participant.credentials_removed`.
   */
  event: string;
  /** The tool (negotiate, permission.changed); the participant (participant events). */
  tool?: string;
  /** The action (negotiate, participant actions); `level-A-to-B` (permission.changed); the key id (key events); the webhook id (webhook events); `op:name@version` per operation, space-separated (resources.transaction). */
  action?: string;
  /** `success`, or the outcome's code (`permission_required`, `tool_error`, `unavailable`, …). */
  outcome: string;
  /** The HTTP status REST gives a negotiate outcome (also for MCP calls). */
  status?: number;
  /** SHA-256 hex of the args' canonical JSON; the args are never stored. */
  argsDigest?: string;
  approvalId?: string;
  /** The request's X-Request-Id. */
  requestId: string;
  prevHash: string;
  hash: string;
}

export interface AuditLogPage {
  entries: AuditLogEntry[];
  /** Pass as `after` for the next page; null on the last page. */
  nextCursor: number | null;
}

export interface AuditVerification {
  /** false when a stored entry was altered, removed or reordered. */
  ok: boolean;
  /** The number of entries checked (up to the first broken one). */
  entries: number;
  /** With ok: the chain's last hash (64 zeros for an empty chain). */
  head?: string;
  /** Without ok: the seq of the first entry that fails (for entries removed from the end, the last one's). */
  brokenAt?: number;
}

@Route('conversations')
@Tags('Audit')
export class AuditController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The conversation's audit entries, oldest first (owner, admin). Entries
   * outlive the conversation: after its deletion, admins still read them here.
   * Admin and user keys' events are in the chain `_system` (admins only).
   * @param after Entries with a greater seq (a previous page's nextCursor); 0 from the start.
   * @isLong after must be an integer from 0 to 9007199254740991
   * @minimum after 0 must be an integer from 0 to 9007199254740991
   * @maximum after 9007199254740991 must be an integer from 0 to 9007199254740991
   * @param limit Page size, 1 to 500.
   * @isInt limit must be an integer from 1 to 500
   * @minimum limit 1 must be an integer from 1 to 500
   * @maximum limit 500 must be an integer from 1 to 500
   * @summary Read a conversation's audit entries
   */
  @Get('{id}/audit')
  @OperationId('ListAuditEntries')
  @Response<Problem>(400, 'Bad after or limit, or an invalid id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read the audit log', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation (and no entries), or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async list(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Query() after: number = 0,
    @Query() limit: number = 100,
  ): Promise<AuditLogPage> {
    return this.services.audit.list(principalOf(req), id, after, limit);
  }

  /**
   * Recomputes the conversation's hash chain (owner, admin).
   * @summary Verify a conversation's audit hash chain
   */
  @Get('{id}/audit/verify')
  @OperationId('VerifyAuditChain')
  @Response<Problem>(400, 'An invalid id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not verify the audit log', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation (and no entries), or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async verify(@Request() req: ExRequest, @Path() id: Id): Promise<AuditVerification> {
    return this.services.audit.verify(principalOf(req), id);
  }
}
