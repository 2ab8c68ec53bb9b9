import { Body, Controller, Example, Get, Path, Put, Request, Response, Route, Tags } from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { actorOf } from '../core/principal';
import { principalOf } from '../http/authenticate';
import { listPermissions, permissionHistory } from '../core/permissions';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { LevelChange, PermissionHistory, Permissions } from './responses';
import type { Id, PermissionLevel, ToolName } from './types';
import { PROBLEM_JSON } from '../http/problem';
import {
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  unsupportedMediaTypeExample,
  validationFailedExample,
  levelChangeExample,
  permissionHistoryExample,
  permissionsExample,
} from './examples';

export interface SetLevelBody {
  /**
   * 1 read, 2 write, 3 execute.
   * @isInt must be an integer from 1 to 3
   * @minimum 1 must be an integer from 1 to 3
   * @maximum 3 must be an integer from 1 to 3
   */
  level: number;
}

@Route('conversations/{id}/permissions')
@Tags('Permissions')
export class PermissionsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The effective level of every registered tool in this conversation.
   * @summary Read each tool's permission level
   */
  @Get()
  @Example<Permissions>(permissionsExample)
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read permissions', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getPermissions(@Request() req: ExRequest, @Path() id: Id): Promise<Permissions> {
    await this.services.access.check(principalOf(req), id, 'manage', 'read permissions');
    return listPermissions(
      this.services.stores.permissions,
      id,
      this.services.catalog.snapshot().set.tools.map((t) => t.name),
    );
  }

  /**
   * Permission changes, oldest first. Append-only.
   * @summary Read the permission change history
   */
  @Get('history')
  @Example<PermissionHistory>(permissionHistoryExample)
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents may not read the permission history', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getHistory(@Request() req: ExRequest, @Path() id: Id): Promise<PermissionHistory> {
    await this.services.access.check(principalOf(req), id, 'manage', 'read the permission history');
    return { events: await permissionHistory(this.services.stores.permissions, id) };
  }

  /**
   * Sets a tool's level in this conversation (raising or lowering); creates the conversation on first use, owned by the caller.
   * @summary Set a tool's permission level
   * @example body {"level": 2}
   */
  @Put('{tool}')
  @Example<LevelChange>(levelChangeExample)
  @Response<Problem>(400, 'Level is not 1, 2 or 3', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents never change permissions', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such tool, or a conversation the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async setLevel(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Path() tool: ToolName,
    @Body() body: SetLevelBody,
  ): Promise<LevelChange> {
    const p = principalOf(req);
    // An agent learns only that it may not (or, for another conversation, nothing).
    if (p.role === 'agent') await this.services.access.check(p, id, 'manage', 'change permissions');
    if (!this.services.catalog.snapshot().set.byName.has(tool)) {
      throw new AppError('not_found', `Unknown tool: ${tool.slice(0, 64)}`);
    }
    const { conversationCreated, ...change } = await this.services.stores.permissions.setLevel(
      id,
      tool,
      body.level as PermissionLevel,
      actorOf(p),
      {
        createOwner: p.subject,
        ...(p.role === 'admin' ? {} : { requiredOwner: p.subject }),
      },
    );
    if (conversationCreated) await this.services.audit.changed(p, 'conversation.created', id, req.id ?? '-');
    await this.services.audit.changed(p, 'permission.changed', id, req.id ?? '-', {
      tool,
      action: `level-${change.previousLevel}-to-${change.level}`,
    });
    return change;
  }
}
