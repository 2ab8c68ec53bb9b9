import { Body, Controller, Get, Path, Put, Response, Route, Tags } from '@tsoa/runtime';
import { listPermissions, permissionHistory } from '../core/permissions';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { Id, PermissionLevel } from './types';

export interface ToolPermission {
  tool: string;
  level: PermissionLevel;
  /** explicit: set in this conversation; legacy: the M4 level; default: 1. */
  source: 'explicit' | 'legacy' | 'default';
  /** Epoch milliseconds of the explicit level, or null. */
  upgradedAt: number | null;
}

export interface Permissions {
  conversationId: string;
  legacyLevel: number | null;
  tools: ToolPermission[];
}

export interface SetLevelBody {
  /**
   * 1 read, 2 write, 3 execute.
   * @isInt
   * @minimum 1
   * @maximum 3
   */
  level: number;
}

export interface LevelChange {
  tool: string;
  level: PermissionLevel;
  /** The effective level before the change. */
  previousLevel: PermissionLevel;
}

export interface PermissionEvent {
  tool: string;
  /** The effective level before (null for levels carried over from M4). */
  fromLevel: number | null;
  toLevel: number;
  /** Epoch milliseconds. */
  at: number;
  /** Who changed it: `client` (REST), `negotiate`, or `m4-migration`. */
  actor: string;
}

export interface PermissionHistory {
  events: PermissionEvent[];
}

@Route('conversations/{id}/permissions')
@Tags('Permissions')
export class PermissionsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /** The effective level of every registered tool in this conversation. */
  @Get()
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding, a NUL character or an invalid id')
  @Response<Problem>(404, 'No such conversation')
  public async getPermissions(@Path() id: Id): Promise<Permissions> {
    return listPermissions(
      this.services.stores.permissions,
      id,
      this.services.catalog.snapshot().set.tools.map((t) => t.name),
    );
  }

  /** Permission changes, oldest first. Append-only. */
  @Get('history')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding, a NUL character or an invalid id')
  @Response<Problem>(404, 'No such conversation')
  public async getHistory(@Path() id: Id): Promise<PermissionHistory> {
    return { events: await permissionHistory(this.services.stores.permissions, id) };
  }

  /** Sets a tool's level in this conversation (raising or lowering); creates the conversation on first use. */
  @Put('{tool}')
  @Response<Problem>(400, 'Level is not 1, 2 or 3')
  @Response<Problem>(404, 'No such tool')
  @Response<Problem>(415, 'Unsupported Content-Encoding or charset')
  public async setLevel(@Path() id: Id, @Path() tool: string, @Body() body: SetLevelBody): Promise<LevelChange> {
    if (!this.services.catalog.snapshot().set.byName.has(tool)) {
      throw new AppError('not_found', `Unknown tool: ${tool.slice(0, 64)}`);
    }
    return this.services.stores.permissions.setLevel(id, tool, body.level as PermissionLevel, 'client');
  }
}
