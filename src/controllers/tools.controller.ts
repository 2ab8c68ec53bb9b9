import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Path, Produces, Query, Request, Response, Route, Tags } from '@tsoa/runtime';
import {
  buildDefinitions,
  systemPrompt,
  type DefinitionFormat,
  type PromptOptions,
  type ToolDefinitions,
} from '../core/llm-definitions';
import { principalOf } from '../http/authenticate';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { AlignmentValue, Id, ToolName } from './types';
import { PROBLEM_JSON } from '../http/problem';
import {
  badUrlExample,
  conversationNotFoundExample,
  notFoundExample,
  unauthorizedExample,
  validationFailedExample,
} from './examples/problems';

// Declared in full, not as Omit<ActionView, ...>: tsoa names such types
// `Pick_ActionView.Exclude_keyof...`; the assignment checks in listTools and
// getTool keep these in step with src/core/tool-catalog.ts.

/** One action of a tool. */
export interface Action {
  /** The bare action (capability) name, kebab-case. */
  name: string;
  /** Canonical `tool/action`. */
  qualifiedName: string;
  /** Provider-safe `tool_action`. */
  providerName: string;
  description: string;
  /** Required permission level: 1 read, 2 write, 3 execute. */
  level: number;
  alignment: AlignmentValue;
  /** JSON Schema of the args (`type: "object"`). */
  inputSchema: { [key: string]: unknown };
  /**
   * JSON Schema of the output (`type: "object"`), when the action declares
   * one (MCP `outputSchema`: the MCP endpoint checks each result against it).
   */
  outputSchema?: { [key: string]: unknown };
  /**
   * Shown to admins only: a participant's action whose definition changed
   * upstream, awaiting an admin's approval. It is left out for everyone else,
   * and a call answers 409 `tool_definition_changed`.
   */
  status?: 'quarantined';
  /**
   * Resources that must exist before the action runs (API.md, "Tool
   * dependencies"); `{arg}` placeholders are filled from the args. Otherwise
   * negotiate answers 409 `dependency_unmet`.
   */
  requires?: ResourceRequirementView[];
  /** Resources the action writes; a write that breaks `schema` fails the call (`tool_error`), nothing written. */
  produces?: ResourceProductView[];
}

/** A required resource: its name (with `{arg}` placeholders), the tool that must have created it, the JSON Schema its data must match. */
export interface ResourceRequirementView {
  resource: string;
  createdBy?: string;
  schema?: { [key: string]: unknown };
}

/** A produced resource: its name (with `{arg}` placeholders) and the JSON Schema its data must match. */
export interface ResourceProductView {
  resource: string;
  schema?: { [key: string]: unknown };
}

/** An edge of the dependency graph: `from` produces the resource `to` requires. */
export interface DependencyEdgeView {
  /** The producer, `tool/action`. */
  from: string;
  /** The consumer, `tool/action`. */
  to: string;
  /** The consumer's required resource, as declared (with `{arg}` placeholders). */
  resource: string;
}

export interface DependencyGraph {
  edges: DependencyEdgeView[];
}

/** A registered tool and its actions. */
export interface Tool {
  name: string;
  version: string;
  description: string;
  /** Its actions' names. */
  capabilities: string[];
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

  /**
   * Every registered tool, sorted by name, with its actions. A participant's
   * action whose definition changed upstream (quarantined) is listed for
   * admins only, with `status: "quarantined"`.
   * @summary List the registered tools
   */
  @Get()
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding or a NUL character', badUrlExample, PROBLEM_JSON)
  public listTools(@Request() req: ExpressRequest): ToolList {
    return { tools: this.services.catalog.toolViews(req.principal?.role === 'admin') };
  }

  /**
   * The dependency graph of the tools' coordination contracts: an edge from
   * each action that produces a resource to each action that requires it
   * (a `{arg}` placeholder stands for any text). An action that requires what
   * it produces itself has no edge to itself. Sorted by `from`, `to`,
   * `resource`; the actions of the tools GET /tools shows.
   * @summary The order tools' actions depend on each other in
   */
  @Get('graph')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding or a NUL character', badUrlExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  public getGraph(): DependencyGraph {
    const edges: DependencyEdgeView[] = [...this.services.catalog.snapshot().callable.edges];
    return { edges };
  }

  // The literal routes come before `{name}`: express matches in registration
  // order, and `/tools/{name}` would otherwise answer `/tools/definitions`.

  /**
   * Tool definitions ready to hand to a model, one per action. Names are the
   * provider-safe `tool_action`, except in `canonical` (`tool/action`, seed
   * 000). Each description names the owning tool and the other tools that
   * offer the same action. `openai` and `canonical` give OpenAI's
   * `{ tools: [{ type: "function", function: { name, description, parameters } }] }`,
   * `anthropic` gives `{ tools: [{ name, description, input_schema }] }`, `mcp`
   * gives `{ tools: [{ name, description, inputSchema, annotations }] }`
   * (`readOnlyHint` exactly for level-1 actions; `destructiveHint` for
   * execute actions and for writes whose verb does more than add;
   * `idempotentHint` for reads and set-style writes such as update or delete).
   * Without `query` the actions are sorted by qualified name.
   * @param format The shape of the definitions; default `openai`.
   * @param query Free text: actions are ranked by relevance to it, most relevant first (none are dropped).
   * @param limit Keep only the first 1 to 128 actions, after ranking.
   * @isInt limit must be an integer from 1 to 128
   * @minimum limit 1 must be an integer from 1 to 128
   * @maximum limit 128 must be an integer from 1 to 128
   * @param conversationId Leave out the actions this conversation's policy denies.
   * @summary Tool definitions for an LLM (OpenAI, Anthropic, MCP)
   */
  @Get('definitions')
  @Response<Problem>(400, 'Unknown format, bad limit or conversation id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getDefinitions(
    @Request() req: ExpressRequest,
    @Query() format: DefinitionFormat = 'openai',
    @Query() query?: string,
    @Query() limit?: number,
    @Query() conversationId?: Id,
  ): Promise<ToolDefinitions> {
    const policy =
      conversationId === undefined
        ? undefined
        : await this.services.conversations.policy(principalOf(req), conversationId);
    // An agent key's ceiling: what it can never run is not offered (as MCP tools/list does).
    const maxLevel = req.principal?.maxLevel;
    // Quarantined actions are never offered: they cannot run (tool-catalog.ts).
    return buildDefinitions(this.services.catalog.snapshot().callable, format, { query, limit, policy, maxLevel });
  }

  /**
   * The system-prompt text of seed 000 ("System Prompt Enhancement") for the
   * registered tools: the participants (tools) and their tools (actions) in
   * `participant/tool` form with their required levels, how to choose when
   * several participants offer the same tool, the provider-safe
   * `participant_tool` names, and what a permission upgrade means.
   * @param conversationId Leave out what this conversation's policy denies, and give each participant's current level in it.
   * @summary System prompt text for the tools
   */
  @Get('prompt')
  @Produces('text/plain')
  @Response<Problem>(400, 'Bad conversation id', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller may not see',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async getPrompt(@Request() req: ExpressRequest, @Query() conversationId?: Id): Promise<string> {
    const { callable: set } = this.services.catalog.snapshot();
    const options: PromptOptions = {};
    if (conversationId !== undefined) {
      const context = await this.services.conversations.promptContext(
        principalOf(req),
        conversationId,
        set.tools.map((t) => t.name),
      );
      options.policy = context.policy;
      options.levels = context.levels;
    }
    const text = systemPrompt(set, options);
    // tsoa's generated handler would JSON-encode a returned string (res.json):
    // send the raw text here; the handler then sees the response sent and
    // leaves it alone. The return value only gives the spec its type.
    req.res!.status(200).type('text/plain; charset=utf-8').send(text);
    return text;
  }

  /**
   * One tool.
   * @summary Read one tool
   */
  @Get('{name}')
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    badUrlExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(404, 'No such tool', notFoundExample, PROBLEM_JSON)
  public getTool(@Request() req: ExpressRequest, @Path() name: ToolName): Tool {
    const tool = this.services.catalog.toolViews(req.principal?.role === 'admin').find((t) => t.name === name);
    if (!tool) throw new AppError('not_found', `Tool not found: ${name.slice(0, 64)}`);
    return tool;
  }
}
