import {
  Body,
  Controller,
  Delete,
  Example,
  Get,
  Path,
  Post,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import type { KeyView } from '../core/keys';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import type { Services } from '../services';
import type { ApiKey, CreatedApiKey, KeyList } from './responses';
import type { Id, KeyId, PermissionLevel } from './types';
import { PROBLEM_JSON } from '../http/problem';
import { createdAgentKeyExample, createdKeyExample, keyListExample } from './examples/keys';
import {
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  validationFailedExample,
} from './examples/problems';

export interface CreateKeyBody {
  role: 'admin' | 'user';
  /**
   * Whom the key authenticates: conversations it creates are owned by this subject.
   * `admin`, the built-in admin's subject, only with role `admin` (a user so
   * named would own that admin's conversations).
   * @pattern ^[\x21-\x7e]{1,256}$ must be 1 to 256 visible ASCII characters (no spaces)
   */
  subject: string;
  /** @maxLength 200 */
  label?: string;
  /**
   * When the key stops working (epoch milliseconds); absent: never. It must
   * be in the future when the key is minted (a time already past is a 400);
   * the minimum, 2025-01-01, only rules out what is past for certain, such as
   * a time in seconds.
   * @isLong must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   * @minimum 1735689600000 must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   * @maximum 253402300799999 must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   */
  expiresAt?: number;
}

export interface CreateAgentKeyBody {
  /** @maxLength 200 */
  label?: string;
  /** A ceiling: none of the agent's calls above this level runs, whatever the tool's level. */
  maxLevel?: PermissionLevel;
  /**
   * When the key stops working (epoch milliseconds); absent: never. It must
   * be in the future when the key is minted (a time already past is a 400);
   * the minimum, 2025-01-01, only rules out what is past for certain, such as
   * a time in seconds.
   * @isLong must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   * @minimum 1735689600000 must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   * @maximum 253402300799999 must be an integer (epoch milliseconds) in the future, at most 9999-12-31
   */
  expiresAt?: number;
}

export interface Me {
  subject: string;
  role: 'admin' | 'user' | 'agent';
  keyId?: string;
  conversationId?: string;
  maxLevel?: number;
}

function view(k: KeyView): ApiKey {
  return { ...k };
}

@Route('')
@Tags('Identity')
export class KeysController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The caller, as the service knows it.
   * @summary Who the bearer token authenticates
   */
  @Get('me')
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public me(@Request() req: ExRequest): Me {
    const p = principalOf(req);
    return {
      subject: p.subject,
      role: p.role,
      ...(p.keyId !== undefined ? { keyId: p.keyId } : {}),
      ...(p.conversationId !== undefined ? { conversationId: p.conversationId } : {}),
      ...(p.maxLevel !== undefined ? { maxLevel: p.maxLevel } : {}),
    };
  }

  /**
   * Mints an admin or user key (admins only). The token is in this response only.
   * @summary Mint an API key (admins)
   * @example body {"role": "user", "subject": "alice", "label": "alice laptop"}
   */
  @Post('keys')
  @Example<CreatedApiKey>(createdKeyExample)
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    400,
    'Bad role, subject or expiresAt: a user named `admin`, an expiresAt not in the future',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Only admins mint keys', forbiddenExample, PROBLEM_JSON)
  public async createKey(@Request() req: ExRequest, @Body() body: CreateKeyBody): Promise<CreatedApiKey> {
    const key = await this.services.keys.mint(principalOf(req), body, req.id ?? '-');
    this.setStatus(201);
    return key;
  }

  /**
   * The keys the caller may manage: an admin's are all keys, a user's the agent keys of its conversations.
   * @summary List API keys
   */
  @Get('keys')
  @Example<KeyList>(keyListExample)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents manage no keys', forbiddenExample, PROBLEM_JSON)
  public async listKeys(@Request() req: ExRequest): Promise<KeyList> {
    return { keys: (await this.services.keys.list(principalOf(req))).map(view) };
  }

  /**
   * Revokes a key: every replica refuses it within 5 seconds (this one at once).
   * @summary Revoke an API key
   */
  @Delete('keys/{keyId}')
  @SuccessResponse(204, 'Revoked')
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents revoke no keys', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such key among those the caller manages', conversationNotFoundExample, PROBLEM_JSON)
  public async revokeKey(@Request() req: ExRequest, @Path() keyId: KeyId): Promise<void> {
    const hash = await this.services.keys.revoke(principalOf(req), keyId, req.id ?? '-');
    // Refused on this replica from now on (the others poll).
    if (hash !== undefined) this.services.authenticator.drop(hash);
    this.setStatus(204);
  }

  /**
   * Mints a key for an agent in this conversation (its owner or an admin). The token is in this response only.
   * @summary Mint an agent key for one conversation
   * @example body {"label": "support bot", "maxLevel": 2}
   */
  @Post('conversations/{id}/agent-keys')
  @Example<CreatedApiKey>(createdAgentKeyExample)
  @SuccessResponse(201, 'Created')
  @Response<Problem>(400, 'Bad maxLevel or expiresAt (one not in the future)', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents mint no keys', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async createAgentKey(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Body() body: CreateAgentKeyBody,
  ): Promise<CreatedApiKey> {
    const key = await this.services.keys.mintAgent(principalOf(req), id, body, req.id ?? '-');
    this.setStatus(201);
    return key;
  }
}
