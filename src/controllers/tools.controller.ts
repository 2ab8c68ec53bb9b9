import { Controller, Get, Path, Response, Route, Tags } from '@tsoa/runtime';
import type { ActionView, ToolView } from '../core/tool-catalog';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { AlignmentValue } from './types';

export interface Action extends Omit<ActionView, 'alignment' | 'inputSchema'> {
  alignment: AlignmentValue;
  /** JSON Schema of the args (`type: "object"`). */
  inputSchema: { [key: string]: unknown };
}

export interface Tool extends Omit<ToolView, 'actions'> {
  actions: Action[];
}

export interface ToolList {
  tools: Tool[];
}

@Route('tools')
@Tags('Tools')
export class ToolsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /** Every registered tool, sorted by name, with its actions. */
  @Get()
  public listTools(): ToolList {
    return { tools: this.services.catalog.toolViews() };
  }

  /** One tool. */
  @Get('{name}')
  @Response<Problem>(404, 'No such tool')
  public getTool(@Path() name: string): Tool {
    const tool = this.services.catalog.toolViews().find((t) => t.name === name);
    if (!tool) throw new AppError('not_found', `Tool not found: ${name.slice(0, 64)}`);
    return tool;
  }
}
