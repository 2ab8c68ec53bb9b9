/**
 * Tool definitions for language models, in each provider's format (API.md
 * "LLM and MCP interop", GET /tools/definitions): `openai`, `anthropic`,
 * `mcp` (an MCP `tools/list` result) and `canonical`, one definition per
 * action. Pure: no I/O; which actions, and in what order, is selection.ts's.
 *
 * Names are the provider-safe `tool_action` (providers reject `/`), except in
 * the `canonical` format, which keeps seed 000's `tool/action`. Every
 * description names the owning tool (the seed's participant) and, when several
 * tools offer the same action, says so, so a model can tell `calculator_add`
 * from `math-service_add`.
 */
import { LEVEL_NAMES } from '../permissions';
import type { LoadedAction, ToolSet } from '../tool-registry';
import { allowedActions, offeredBy, selectActions, type SelectOptions } from './selection';
import { truncate, withFullStop } from './sentences';

// ---- Shapes (as the OpenAPI spec publishes them) ---------------------------------------

export type DefinitionFormat = 'openai' | 'anthropic' | 'mcp' | 'canonical';

export const DEFINITION_FORMATS: readonly DefinitionFormat[] = ['openai', 'anthropic', 'mcp', 'canonical'];

/** A JSON Schema of an action's args: always `type: "object"` at the top, no `$schema`. */
export interface ArgsJsonSchema {
  type: 'object';
  properties: { [key: string]: unknown };
  [key: string]: unknown;
}

export interface OpenAiFunction {
  /** `tool_action`, or `tool/action` in the canonical format. */
  name: string;
  /** Names the owning tool; mentions the other tools offering the same action. */
  description: string;
  parameters: ArgsJsonSchema;
}

export interface OpenAiToolDefinition {
  type: 'function';
  function: OpenAiFunction;
}

/** The `openai` and `canonical` formats (OpenAI Chat Completions `tools`). */
export interface OpenAiDefinitions {
  tools: OpenAiToolDefinition[];
}

export interface AnthropicToolDefinition {
  /** `tool_action`. */
  name: string;
  description: string;
  input_schema: ArgsJsonSchema;
}

/** The `anthropic` format (Anthropic Messages `tools`). */
export interface AnthropicDefinitions {
  tools: AnthropicToolDefinition[];
}

/** MCP tool annotations; see `mcpAnnotations` for how they are decided. */
export interface McpToolAnnotations {
  /** True exactly for level-1 (read) actions. */
  readOnlyHint: boolean;
  /** False for reads and for writes whose verb only adds (create, add, insert, ...); true otherwise (always for level 3). */
  destructiveHint: boolean;
  /** True for reads and for set-style writes (update, set, replace, delete, ...); false otherwise (always for level 3). */
  idempotentHint: boolean;
}

export interface McpToolDefinition {
  /** `tool_action`. */
  name: string;
  description: string;
  inputSchema: ArgsJsonSchema;
  /** JSON Schema of the output (`type: "object"`), for actions that declare one. */
  outputSchema?: { [key: string]: unknown };
  annotations: McpToolAnnotations;
}

/** The `mcp` format (an MCP `tools/list` result). */
export interface McpDefinitions {
  tools: McpToolDefinition[];
}

/** One of the formats: `openai` and `canonical` share a shape. */
export type ToolDefinitions = OpenAiDefinitions | AnthropicDefinitions | McpDefinitions;

export interface DefinitionsByFormat {
  openai: OpenAiDefinitions;
  canonical: OpenAiDefinitions;
  anthropic: AnthropicDefinitions;
  mcp: McpDefinitions;
}

// ---- Building definitions ---------------------------------------------------------------

/** What OpenAI accepts for a function description; longer ones are cut. */
const MAX_DESCRIPTION = 1024;

/** The action's args schema as providers take it: an object schema without `$schema`. */
export function argsSchema(action: LoadedAction): ArgsJsonSchema {
  const { $schema: _ignored, ...schema } = action.inputSchema;
  const properties = schema.properties;
  return {
    ...schema,
    type: 'object',
    properties:
      typeof properties === 'object' && properties !== null ? (properties as ArgsJsonSchema['properties']) : {},
  };
}

type NameForm = 'provider' | 'canonical';

function nameIn(action: LoadedAction, form: NameForm): string {
  return form === 'canonical' ? action.qualifiedName : action.providerName;
}

/**
 * `[tool] What it does. Needs LEVEL permission ... Also offered by ...`: the
 * owner first, so a model reading a long list sees it before anything else.
 */
function describe(action: LoadedAction, set: ToolSet, siblings: readonly LoadedAction[], form: NameForm): string {
  const parts = [`[${action.tool}] ${withFullStop(action.description)}`];
  if (action.level > 1) {
    parts.push(
      `Needs ${LEVEL_NAMES[action.level]} permission (level ${action.level}) for ${action.tool} in the conversation.`,
    );
  }
  const others = siblings.filter((s) => s !== action);
  if (others.length > 0) {
    const toolDescription = set.byName.get(action.tool)?.description;
    parts.push(
      `The same action is also offered by ${others.map((o) => `${o.tool} (${nameIn(o, form)})`).join(', ')}; ` +
        `this one is from the ${action.tool} participant` +
        (toolDescription ? `: ${withFullStop(toolDescription)}` : '.'),
    );
  }
  return truncate(parts.join(' '), MAX_DESCRIPTION);
}

// Verbs by what they do to what exists (first word of the action name).
const ADDITIVE_VERBS = new Set(['create', 'add', 'insert', 'append', 'new', 'register', 'post', 'push', 'enqueue']);
const SET_STYLE_VERBS = new Set([
  'update',
  'set',
  'put',
  'replace',
  'upsert',
  'delete',
  'remove',
  'unset',
  'clear',
  'enable',
  'disable',
]);

/**
 * MCP annotations, decided from the required level and the action's verb
 * (the first word of its name):
 * - readOnlyHint: exactly the level-1 (read) actions.
 * - destructiveHint: never for reads; always for execute (level 3) actions,
 *   which may act beyond the shared context; for writes (level 2), false
 *   only when the verb merely adds (create, add, insert, ...). MCP's own
 *   default is true, and "destructive" there means anything but additive:
 *   `data-tool/update-resource` replaces the whole value, so it is true.
 * - idempotentHint: reads, and set-style writes (update, set, put, replace,
 *   delete, remove, ...): repeating the call with the same args leaves the
 *   same state (a second delete finds nothing to delete; an update's version
 *   counter aside). Additive and other verbs (transform, write, ...) and
 *   execute actions are false, MCP's default.
 */
export function mcpAnnotations(action: Pick<LoadedAction, 'name' | 'level'>): McpToolAnnotations {
  const verb = action.name.split('-')[0] ?? '';
  return {
    readOnlyHint: action.level === 1,
    destructiveHint: action.level === 3 || (action.level === 2 && !ADDITIVE_VERBS.has(verb)),
    idempotentHint: action.level === 1 || (action.level === 2 && SET_STYLE_VERBS.has(verb)),
  };
}

function openAi(
  set: ToolSet,
  actions: readonly LoadedAction[],
  siblings: SiblingLookup,
  form: NameForm,
): OpenAiDefinitions {
  return {
    tools: actions.map((a): OpenAiToolDefinition => ({
      type: 'function',
      function: { name: nameIn(a, form), description: describe(a, set, siblings(a), form), parameters: argsSchema(a) },
    })),
  };
}

type SiblingLookup = (action: LoadedAction) => readonly LoadedAction[];

const BUILDERS: {
  [F in DefinitionFormat]: (
    set: ToolSet,
    actions: readonly LoadedAction[],
    siblings: SiblingLookup,
  ) => DefinitionsByFormat[F];
} = {
  openai: (set, actions, siblings) => openAi(set, actions, siblings, 'provider'),
  canonical: (set, actions, siblings) => openAi(set, actions, siblings, 'canonical'),
  anthropic: (set, actions, siblings) => ({
    tools: actions.map((a) => ({
      name: a.providerName,
      description: describe(a, set, siblings(a), 'provider'),
      input_schema: argsSchema(a),
    })),
  }),
  mcp: (set, actions, siblings) => ({
    tools: actions.map((a) => ({
      name: a.providerName,
      description: describe(a, set, siblings(a), 'provider'),
      inputSchema: argsSchema(a),
      ...(a.outputSchema ? { outputSchema: a.outputSchema } : {}),
      annotations: mcpAnnotations(a),
    })),
  }),
};

/**
 * The definitions of `set` in `format`, one per action the policy allows,
 * ranked by `query` and cut to `limit` (selectActions). Descriptions name
 * the other tools offering the same action among the allowed ones, including
 * those a limit cut (they can still be called).
 */
export function buildDefinitions<F extends DefinitionFormat>(
  set: ToolSet,
  format: F,
  options: SelectOptions = {},
): DefinitionsByFormat[F] {
  const allowed = allowedActions(set, options.policy);
  const byName = offeredBy(allowed);
  const actions = selectActions(set, options);
  return BUILDERS[format](set, actions, (a) => byName.get(a.name) ?? [a]);
}
