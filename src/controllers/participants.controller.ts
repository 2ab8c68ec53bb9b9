import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Put,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import { PROBLEM_JSON, type Problem } from '../http/problem';
import type { ActionDefinitionView, ParticipantView } from '../participants/participant-views';
import type { Services } from '../services';
import {
  bodyValidationFailedExample,
  conflictExample,
  forbiddenExample,
  notFoundExample,
  unauthorizedExample,
} from './examples/problems';
import type { PermissionLevel } from './types';

/** Header name → value (secret: stored encrypted, never shown). */
export type SecretMap = { [name: string]: string };
/** Header or variable name → value; `null` removes that key. */
export type SecretPatch = { [name: string]: string | null };

/**
 * A participant: an MCP server (Streamable HTTP or stdio) or an HTTP API
 * described by OpenAPI 3.x. `url` for mcp-http; `command` (+ `args`, `cwd`)
 * for mcp-stdio; `spec` or `specUrl` (+ `baseUrl`) for openapi.
 */
export interface ParticipantBody {
  /** A tool name: kebab-case, at most 31 characters. */
  name: string;
  description?: string;
  transport: 'mcp-http' | 'mcp-stdio' | 'openapi';
  /** mcp-http: the server's MCP endpoint (http or https). */
  url?: string;
  /** mcp-stdio: the program, spawned without a shell. */
  command?: string;
  args?: string[];
  cwd?: string;
  /** openapi: the document inline. */
  spec?: { [key: string]: unknown };
  /** openapi: the document's URL. */
  specUrl?: string;
  /** openapi: where calls go (else the document's first server). */
  baseUrl?: string;
  /** Secret: sent on every upstream request (mcp-http, openapi). */
  headers?: SecretMap;
  /** Secret, mcp-stdio: the child's environment (beside PATH and the SDK's stdio defaults). */
  env?: SecretMap;
  /** Levels by action (or upstream name), overriding the defaults. */
  levels?: { [action: string]: PermissionLevel };
  /** Upstream names or actions to take (the others are left out). */
  include?: string[];
  /** Upstream names or actions to leave out. */
  exclude?: string[];
  /**
   * Per call, milliseconds; default TOOL_TIMEOUT_MS.
   * @isInt
   */
  timeoutMs?: number;
  enabled?: boolean;
}

/** Any field of the registration but the name; a secret map replaces the stored one key by key. */
export interface ParticipantPatch {
  description?: string;
  transport?: 'mcp-http' | 'mcp-stdio' | 'openapi';
  url?: string;
  command?: string;
  args?: string[];
  cwd?: string;
  spec?: { [key: string]: unknown };
  specUrl?: string;
  baseUrl?: string;
  headers?: SecretPatch;
  env?: SecretPatch;
  levels?: { [action: string]: PermissionLevel };
  include?: string[];
  exclude?: string[];
  /** @isInt */
  timeoutMs?: number;
  enabled?: boolean;
}

export interface CredentialsBody {
  /** Sent instead of the participant's headers on this owner's conversations' calls (mcp-http, openapi). */
  headers: SecretMap;
}

export interface ParticipantList {
  participants: ParticipantView[];
}

const rid = (req: ExRequest): string => req.id ?? '-';

@Route('participants')
@Tags('Participants')
export class ParticipantsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Registers a participant (admins): its upstream tools become the actions of one tool named after it.
   * @summary Register a participant
   */
  @Post()
  @SuccessResponse(201, 'Registered')
  @Response<Problem>(400, 'A bad body (every problem in `errors`)', bodyValidationFailedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Only admins register participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(409, 'A tool or participant has that name', conflictExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async registerParticipant(@Request() req: ExRequest, @Body() body: ParticipantBody): Promise<ParticipantView> {
    const view = await this.services.participants.service.register(principalOf(req), body, rid(req));
    this.setStatus(201);
    return view;
  }

  /**
   * Every participant, with its actions and this replica's status of its upstream; secrets by name only.
   * @summary List participants (admins, users)
   */
  @Get()
  @Response<Problem>(403, 'Agents see no participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async listParticipants(@Request() req: ExRequest): Promise<ParticipantList> {
    return { participants: await this.services.participants.service.list(principalOf(req)) };
  }

  /**
   * One participant, with its actions and this replica's status of its upstream; secrets by name only.
   * @summary Read a participant (admins, users)
   */
  @Get('{name}')
  @Response<Problem>(403, 'Agents see no participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async getParticipant(@Request() req: ExRequest, @Path() name: string): Promise<ParticipantView> {
    return this.services.participants.service.get(principalOf(req), name);
  }

  /**
   * Changes a participant (admins); every replica uses the change within 2 s.
   * @summary Change a participant
   */
  @Patch('{name}')
  @Response<Problem>(400, 'A bad body (every problem in `errors`)', bodyValidationFailedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Only admins change participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async updateParticipant(
    @Request() req: ExRequest,
    @Path() name: string,
    @Body() body: ParticipantPatch,
  ): Promise<ParticipantView> {
    return this.services.participants.service.update(principalOf(req), name, body, rid(req));
  }

  /**
   * Removes the participant, its actions and every owner's credentials for it; its tool leaves every replica.
   * @summary Delete a participant (admins)
   */
  @Delete('{name}')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(403, 'Only admins delete participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async deleteParticipant(@Request() req: ExRequest, @Path() name: string): Promise<void> {
    await this.services.participants.service.remove(principalOf(req), name, rid(req));
    this.setStatus(204);
  }

  /**
   * Lists the upstream's tools again now (admins); a changed or new definition is quarantined.
   * @summary Refresh a participant's tools
   */
  @Post('{name}/refresh')
  @Response<Problem>(403, 'Only admins refresh participants', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async refreshParticipant(@Request() req: ExRequest, @Path() name: string): Promise<ParticipantView> {
    return this.services.participants.service.refresh(principalOf(req), name);
  }

  /**
   * The pinned definition of an action and, while it is quarantined, the new one (admins).
   * @summary Read an action's definitions
   */
  @Get('{name}/actions/{action}')
  @Response<Problem>(403, 'Only admins read definitions', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant or action', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async getParticipantAction(
    @Request() req: ExRequest,
    @Path() name: string,
    @Path() action: string,
  ): Promise<ActionDefinitionView> {
    return this.services.participants.service.action(principalOf(req), name, action);
  }

  /**
   * Pins the action's new definition (admins): the action is active again.
   * @summary Approve a changed definition
   */
  @Post('{name}/actions/{action}/approve')
  @Response<Problem>(403, 'Only admins approve definitions', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant or action', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async approveParticipantAction(
    @Request() req: ExRequest,
    @Path() name: string,
    @Path() action: string,
  ): Promise<ActionDefinitionView> {
    return this.services.participants.service.approve(principalOf(req), name, action, rid(req));
  }

  /**
   * Stores the caller's own headers for this participant (users, admins): calls in conversations the caller
   * owns send them instead of the participant's (mcp-http and openapi).
   * @summary Set my credentials for a participant
   */
  @Put('{name}/credentials/me')
  @SuccessResponse(204, 'Stored')
  @Response<Problem>(400, 'A bad body', bodyValidationFailedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents keep no credentials', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async setParticipantCredentials(
    @Request() req: ExRequest,
    @Path() name: string,
    @Body() body: CredentialsBody,
  ): Promise<void> {
    await this.services.participants.service.setCredentials(principalOf(req), name, body, rid(req));
    this.setStatus(204);
  }

  /**
   * Removes the caller's own headers for this participant: its calls send the participant's again.
   * @summary Remove my credentials for a participant
   */
  @Delete('{name}/credentials/me')
  @SuccessResponse(204, 'Removed')
  @Response<Problem>(403, 'Agents keep no credentials', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such participant', notFoundExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public async deleteParticipantCredentials(@Request() req: ExRequest, @Path() name: string): Promise<void> {
    await this.services.participants.service.deleteCredentials(principalOf(req), name, rid(req));
    this.setStatus(204);
  }
}
