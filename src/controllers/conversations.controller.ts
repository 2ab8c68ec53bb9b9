import {
  Body,
  Controller,
  Delete,
  Get,
  Path,
  Post,
  Query,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { Cursor, Id, JsonObject, Resource } from './types';
import { PROBLEM_JSON } from '../http/problem';
import {
  conflictExample,
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  unsupportedMediaTypeExample,
  validationFailedExample,
} from './examples/problems';

// The rule is DENY_PATTERN_RE in src/core/policy.ts (test/http/openapi-truth.test.ts checks they agree).
/**
 * A deny pattern: `tool/action`, each side 1 to 64 of a-z 0-9 - and the `*` wildcard.
 * @pattern ^[a-z0-9*-]{1,64}\/[a-z0-9*-]{1,64}$ must be tool/action with optional * wildcards, e.g. data-tool/* or *\/delete-*
 */
export type DenyPattern = string;

export interface Policy {
  /**
   * Canonical names with `*` wildcards (`data-tool/*`, `*\/delete-*`): matched actions are denied.
   * @maxItems 256
   */
  deny: DenyPattern[];
}

export interface CreateConversationBody {
  /** Generated (a UUID) when absent. */
  id?: Id;
  metadata?: JsonObject;
  policy?: Policy;
}

export interface Conversation {
  id: string;
  /** The subject of the principal that created it; null for conversations from before identities (admins only). */
  owner: string | null;
  metadata: JsonObject;
  policy: Policy;
  /** The M4 legacy level (1-3), or null. */
  legacyLevel: number | null;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** The seed's M5 document. */
export interface ConversationState {
  /** The M4 legacy level, or null. */
  currentLevel: number | null;
  toolPermissions: { [tool: string]: { level: number; upgradedAt: number } };
  sharedContext: { resources: Resource[] };
}

export interface ConversationPage {
  conversations: Conversation[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

@Route('conversations')
@Tags('Conversations')
export class ConversationsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The conversations the caller sees, ordered by id: an admin's are all of
   * them, a user's those it owns. Agents may not list conversations.
   * @param limit Page size, 1 to 500.
   * @isInt limit must be an integer from 1 to 500
   * @minimum limit 1 must be an integer from 1 to 500
   * @maximum limit 500 must be an integer from 1 to 500
   * @param cursor From the previous page's nextCursor.
   * @summary List conversations
   */
  @Get()
  @Response<Problem>(400, 'Bad limit or cursor', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not list conversations', forbiddenExample, PROBLEM_JSON)
  public async listConversations(
    @Request() req: ExRequest,
    @Query() limit: number = 100,
    @Query() cursor?: Cursor,
  ): Promise<ConversationPage> {
    return this.services.conversations.list(principalOf(req), cursor, limit);
  }

  /**
   * Creates a conversation, owned by the caller.
   * @summary Create a conversation
   */
  @Post()
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    400,
    'Invalid id, metadata or policy; NUL, lone surrogates, `__proto__` keys or nesting over 64 levels',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not create conversations', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(409, 'A conversation with this id exists', conflictExample, PROBLEM_JSON)
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async createConversation(
    @Request() req: ExRequest,
    @Body() body: CreateConversationBody,
  ): Promise<Conversation> {
    const conv = await this.services.conversations.create(
      principalOf(req),
      { id: body.id, metadata: body.metadata, policy: body.policy },
      req.id ?? '-',
    );
    this.setStatus(201);
    return conv;
  }

  /**
   * The conversation object: id, owner, metadata, policy and timestamps
   * (owner, admin; agents read the state instead).
   * @summary Read a conversation
   */
  @Get('{id}')
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read the conversation object', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getConversation(@Request() req: ExRequest, @Path() id: Id): Promise<Conversation> {
    return this.services.conversations.get(principalOf(req), id);
  }

  /**
   * Deletes the conversation with its resources, permissions and history; its agent keys are revoked.
   * @summary Delete a conversation and its data
   */
  @Delete('{id}')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not delete conversations', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async deleteConversation(@Request() req: ExRequest, @Path() id: Id): Promise<void> {
    await this.services.conversations.delete(principalOf(req), id, req.id ?? '-');
    // Its agent keys were revoked with it: refused on this replica from now on (the others poll).
    await this.services.authenticator.refresh();
    this.setStatus(204);
  }

  /**
   * The conversation in the seed's M5 JSON format.
   * @summary Read a conversation's full state
   */
  @Get('{id}/state')
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read the conversation state', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getState(@Request() req: ExRequest, @Path() id: Id): Promise<ConversationState> {
    return this.services.conversations.state(principalOf(req), id);
  }
}
