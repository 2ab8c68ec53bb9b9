/**
 * Tool definitions for language models, and the system prompt of seed 000
 * ("System Prompt Enhancement"), built from the live tool set (API.md "LLM and
 * MCP interop"). Pure: no I/O, no express or Prisma; callers pass the policy
 * and levels they read.
 *
 * One definition per action. Names are the provider-safe `tool_action`
 * (providers reject `/`), except in the `canonical` format, which keeps seed
 * 000's `tool/action`. Every description names the owning tool (the seed's
 * participant) and, when several tools offer the same action, says so, so a
 * model can tell `calculator_add` from `math-service_add`.
 */
import { VERB_SYNONYMS } from './intent-router/match-index';
import { LEVEL_NAMES } from './permissions';
import { deniedBy, type TPolicy } from './policy';
import type { LoadedAction, LoadedTool, ToolSet } from './tool-registry';
import type { Level } from './tool-interface';

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

export interface SelectOptions {
  /** Free text: actions are ranked by relevance to it, most relevant first. */
  query?: string;
  /** Keep only the first `limit` actions (after ranking). */
  limit?: number;
  /** Actions this policy denies are left out. */
  policy?: TPolicy;
}

// ---- Selecting: policy, ranking, limit ----------------------------------------------------

function compareStrings(a: string, b: string): number {
  // Code-unit order, not localeCompare: the order must not depend on the host's locale.
  return a < b ? -1 : a > b ? 1 : 0;
}

function byQualifiedName(a: LoadedAction, b: LoadedAction): number {
  return compareStrings(a.qualifiedName, b.qualifiedName);
}

/** The actions the policy allows, sorted by qualified name. */
export function allowedActions(set: ToolSet, policy?: TPolicy): LoadedAction[] {
  const allowed = policy ? set.actions.filter((a) => deniedBy(policy, a.qualifiedName) === undefined) : set.actions;
  return [...allowed].sort(byQualifiedName);
}

/**
 * What a definitions request returns, in order: the allowed actions, ranked
 * by `query` when one is given (sorted by qualified name otherwise), then cut
 * to `limit`.
 */
export function selectActions(set: ToolSet, options: SelectOptions = {}): LoadedAction[] {
  const allowed = allowedActions(set, options.policy);
  const ranked = hasQueryWords(options.query) ? rankActions(set, allowed, options.query).map((r) => r.action) : allowed;
  return options.limit === undefined ? ranked : ranked.slice(0, Math.max(0, options.limit));
}

// ---- Ranking ------------------------------------------------------------------------------
//
// A small bag-of-words score, enough to put the obviously relevant actions of
// a registry of tens to hundreds first for a "too many tools" host. Each query
// word scores the best field it occurs in (weights below: the action's own
// name counts most, its leading verb most of all, then the tool's name, the
// argument names and the description, then the tool's description), plus a
// fifth of what it scores in the other fields. A word found only through a
// verb synonym (`fetch` for `read`, `add` for `create`, the intent router's
// table) or as a shared stem (`summary` / `summarize`) counts for less than
// the word itself. Ties keep qualified-name order, so the result is stable.

/** How much a query word is worth where it is found. */
export const FIELD_WEIGHTS = {
  verb: 5,
  name: 4,
  tool: 2.5,
  args: 1.5,
  description: 1.5,
  toolDescription: 0.75,
} as const;
type Field = keyof typeof FIELD_WEIGHTS;
const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];

/** How well a field word matches a query word. */
const MATCH_WEIGHTS = { exact: 1, synonym: 0.6, stem: 0.5 } as const;
/** Other fields a query word is found in add this share of their score. */
const OTHER_FIELDS_SHARE = 0.2;
/** Bounds the work of one request: longer queries are cut. */
const MAX_QUERY_WORDS = 32;
const MAX_QUERY_CHARS = 1000;
/** Shared stems shorter than this are coincidences (`re-`, `con-`). */
const MIN_STEM = 5;

/** Words that say nothing about which action is meant. `tool` is in every other tool's name. */
const STOP_WORDS = new Set(
  (
    'a an the and or of to for in on at by with from into onto about is are be been it its this that these those ' +
    'my me i you we our your us please can could would should will shall may might must do does did how what which ' +
    'who whom when where why want need needs using use via as then than some any all each so if not no ' +
    'tool tools action actions function call'
  ).split(' '),
);

/** Lowercase words of letters and digits; camelCase splits; plurals fold to the singular. */
export function words(text: string): string[] {
  return text
    .slice(0, MAX_QUERY_CHARS)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '')
    .map(singular);
}

function singular(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

function queryWords(query: string | undefined): string[] {
  if (query === undefined) return [];
  return [...new Set(words(query).filter((w) => !STOP_WORDS.has(w)))].slice(0, MAX_QUERY_WORDS);
}

function hasQueryWords(query: string | undefined): query is string {
  return queryWords(query).length > 0;
}

/**
 * Words that stand for one another in a query: the intent router's verb
 * synonyms (`get` ~ `read` ~ `fetch`, `add` ~ `create`) plus a few everyday
 * words for the bundled tools' verbs, which only ranking uses (routing a
 * bare `sum` to `add` would be a guess; ranking it near `add` is a hint).
 */
const RANKING_SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  ...VERB_SYNONYMS,
  add: ['sum', 'plus', 'addition'],
  multiply: ['time', 'product'],
  count: ['many', 'total', 'tally'],
  summarize: ['summary', 'statistic', 'stat', 'describe', 'analyze', 'analyse'],
  export: ['download', 'dump'],
  integrate: ['integral'],
};

const SYNONYMS: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const related = new Map<string, Set<string>>();
  for (const [verb, synonyms] of Object.entries(RANKING_SYNONYMS)) {
    const group = [verb, ...synonyms].map(singular);
    for (const w of group) {
      const set = related.get(w) ?? new Set<string>();
      for (const other of group) if (other !== w) set.add(other);
      related.set(w, set);
    }
  }
  return related;
})();

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** How well `candidate` (a word of a field) matches query word `q`, 0 when not at all. */
function matchWeight(q: string, candidate: string): number {
  if (q === candidate) return MATCH_WEIGHTS.exact;
  if (SYNONYMS.get(q)?.has(candidate)) return MATCH_WEIGHTS.synonym;
  const shared = commonPrefixLength(q, candidate);
  if (shared >= MIN_STEM || (shared >= 4 && shared === Math.min(q.length, candidate.length))) {
    return MATCH_WEIGHTS.stem;
  }
  return 0;
}

type ActionIndexEntry = Record<Field, ReadonlySet<string>>;

function schemaWords(schema: Record<string, unknown>): { names: string[]; text: string[] } {
  const names: string[] = [];
  const text: string[] = [];
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null) return { names, text };
  for (const [key, value] of Object.entries(properties as Record<string, unknown>)) {
    names.push(...words(key));
    if (typeof value !== 'object' || value === null) continue;
    const prop = value as { description?: unknown; enum?: unknown };
    if (typeof prop.description === 'string') text.push(...words(prop.description));
    // Enum values are what a caller asks for by name: `csv`, `uppercase`.
    if (Array.isArray(prop.enum)) names.push(...prop.enum.filter((v) => typeof v === 'string').flatMap(words));
  }
  return { names, text };
}

function indexAction(action: LoadedAction, tool: LoadedTool | undefined): ActionIndexEntry {
  const [verb = '', ...rest] = words(action.name);
  const schema = schemaWords(action.inputSchema);
  return {
    verb: new Set([verb]),
    name: new Set(rest),
    tool: new Set(words(action.tool)),
    args: new Set(schema.names),
    description: new Set([...words(action.description), ...schema.text]),
    toolDescription: new Set(words(tool?.description ?? '')),
  };
}

/** Built once per tool set (sets are immutable; a reload makes a new one). */
const indexes = new WeakMap<ToolSet, Map<LoadedAction, ActionIndexEntry>>();

function indexOf(set: ToolSet): Map<LoadedAction, ActionIndexEntry> {
  let index = indexes.get(set);
  if (!index) {
    index = new Map(set.actions.map((a) => [a, indexAction(a, set.byName.get(a.tool))] as const));
    indexes.set(set, index);
  }
  return index;
}

function bestIn(q: string, fieldWords: ReadonlySet<string>): number {
  if (fieldWords.has(q)) return MATCH_WEIGHTS.exact;
  let best = 0;
  for (const w of fieldWords) best = Math.max(best, matchWeight(q, w));
  return best;
}

function scoreEntry(entry: ActionIndexEntry, query: readonly string[]): number {
  let total = 0;
  for (const q of query) {
    const scores = FIELDS.map((f) => FIELD_WEIGHTS[f] * bestIn(q, entry[f]));
    const best = Math.max(...scores);
    const rest = scores.reduce((sum, s) => sum + s, 0) - best;
    total += best + OTHER_FIELDS_SHARE * rest;
  }
  return Math.round(total * 1000) / 1000;
}

export interface RankedAction {
  action: LoadedAction;
  score: number;
}

/**
 * `actions` (of `set`) by relevance to `query`, most relevant first; equal
 * scores in qualified-name order. Actions that match nothing stay, last.
 */
export function rankActions(set: ToolSet, actions: readonly LoadedAction[], query: string): RankedAction[] {
  const q = queryWords(query);
  const index = indexOf(set);
  return actions
    .map((action) => {
      const entry = index.get(action) ?? indexAction(action, set.byName.get(action.tool));
      return { action, score: q.length === 0 ? 0 : scoreEntry(entry, q) };
    })
    .sort((a, b) => b.score - a.score || byQualifiedName(a.action, b.action));
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

/** Action name -> the tools offering it, among the actions a caller can see. */
function offeredBy(actions: readonly LoadedAction[]): Map<string, LoadedAction[]> {
  const byName = new Map<string, LoadedAction[]>();
  for (const a of actions) byName.set(a.name, [...(byName.get(a.name) ?? []), a]);
  return byName;
}

function withFullStop(text: string): string {
  const trimmed = text.trim().replace(/\s+/g, ' ');
  return trimmed === '' || /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
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

// ---- The system prompt --------------------------------------------------------------

export interface PromptOptions {
  /** Actions this policy denies are left out. */
  policy?: TPolicy;
  /** The conversation's current level per tool, when the prompt is for one conversation. */
  levels?: Readonly<Record<string, Level>>;
}

const MAX_ONE_LINE = 200;

/** The first sentence, on one line: it ends at . ! or ? before a space or the end (not at an ellipsis). */
export function firstSentence(text: string): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  const end = /(?<!\.)[.!?](?= |$)/.exec(flat);
  return truncate(end ? flat.slice(0, end.index + 1) : withFullStop(flat), MAX_ONE_LINE);
}

function levelLabel(level: Level): string {
  return `${LEVEL_NAMES[level]}, level ${level}`;
}

function participantLines(set: ToolSet, allowed: readonly LoadedAction[], options: PromptOptions): string[] {
  const lines: string[] = [];
  for (const tool of set.tools) {
    const actions = allowed.filter((a) => a.tool === tool.name);
    if (actions.length === 0) continue;
    const current = options.levels?.[tool.name];
    const levelNote = current === undefined ? '' : ` (current level in this conversation: ${levelLabel(current)})`;
    lines.push(`- ${tool.name}${levelNote}: ${firstSentence(tool.description)}`);
    for (const a of actions) {
      const upgrade = current !== undefined && current < a.level ? '; needs an upgrade first' : '';
      lines.push(`  - '${a.qualifiedName}' - ${firstSentence(a.description)} (${levelLabel(a.level)}${upgrade})`);
    }
  }
  return lines;
}

function duplicateLines(allowed: readonly LoadedAction[]): string[] {
  return [...offeredBy(allowed)]
    .filter(([, offering]) => offering.length > 1)
    .map(([name, offering]) => `- ${name}: ${offering.map((a) => `'${a.qualifiedName}'`).join(', ')}`);
}

/**
 * The system-prompt text of seed 000 ("System Prompt Enhancement") for the
 * live tool set: the participants (tools) and their tools (actions) in
 * `participant/tool` form, how to choose when several offer the same one, the
 * provider-safe names, and what a permission upgrade means.
 */
export function systemPrompt(set: ToolSet, options: PromptOptions = {}): string {
  const allowed = allowedActions(set, options.policy);
  const example = allowed[0]?.qualifiedName ?? 'calculator/add';
  const [exampleTool = 'calculator', exampleAction = 'add'] = example.split('/');
  const upgradeExample = allowed.find((a) => a.level > 1) ?? { tool: 'PARTICIPANT', level: 2 };
  const duplicates = duplicateLines(allowed);
  const withheld = set.actions.length - allowed.length;

  const sections: string[][] = [
    [
      'You have access to tools from multiple participants in this workspace. ' +
        "Tools are namespaced as 'participant/tool': the participant is the tool provider that owns the tool " +
        `and runs it, so '${example}' is the ${exampleAction} tool of the ${exampleTool} participant. ` +
        'Each tool needs a permission level: read (1), write (2) or execute (3).',
    ],
    ['Participants and their tools:', ...participantLines(set, allowed, options)],
  ];
  if (withheld > 0) {
    sections.push([
      `This conversation's policy withholds ${withheld} more tool(s); they are not listed and cannot be called.`,
    ]);
  }
  sections.push([
    'When multiple participants offer similar tools, consider:',
    "1. The participant's description and capabilities",
    "2. The specific tool's description",
    "3. The context of the user's request",
    ...(duplicates.length > 0
      ? [
          'These tools are offered by more than one participant; a call that names only the tool is refused as ambiguous, so name the participant:',
          ...duplicates,
        ]
      : ['No tool is currently offered by more than one participant.']),
  ]);
  sections.push([
    "Function-calling APIs that do not allow '/' in function names show the same tools as 'participant_tool' " +
      `(for example '${exampleTool}_${exampleAction}' for '${example}'). Both forms name the same tool and mean the same thing.`,
    "Always use the full 'participant/tool' name when calling tools.",
  ]);
  sections.push([
    'Permissions: each participant has its own permission level in this conversation, 1 (read), 2 (write) or 3 (execute); it starts at 1. ' +
      "A tool runs only when its participant's level is at least the tool's required level. Otherwise the call is not run " +
      'and returns the error code \'permission_required\' with an approval reason ("Permission upgrade required: ...") ' +
      "naming the participant, the tool, the required and the current level. Only the conversation's owner can approve, " +
      `by sending upgrade:PARTICIPANT:level-N (for example upgrade:${upgradeExample.tool}:level-${upgradeExample.level}); ` +
      'you cannot do it yourself. ' +
      'Tell the user which upgrade you need and why, and do not retry the call until they have approved it.',
  ]);
  return `${sections.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}
