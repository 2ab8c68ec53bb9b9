/**
 * What a tool module is, and how one becomes a LoadedTool: the three export
 * forms (a ToolDefinition from `defineTool`, a BaseTool class with a static
 * `identity`, a factory `(sdk) => tool`), their validation, and the args
 * parser and JSON Schema of each action. Used by the registry for bundled
 * tools and inside each TOOLS_DIR sandbox worker, so both load a module the
 * same way. Imports no database code: it runs inside worker threads.
 */
import { z } from 'zod';
import { MAX_NAME_LENGTH, TOOL_NAME_RE, compareNames, providerName, qualifiedName } from './naming';
import {
  ToolError,
  levelFromVerb,
  sdk,
  type ActionDefinition,
  type Level,
  type ToolClass,
  type ToolContext,
} from './tool-interface';
import type { RemoteActionInfo, RunCall } from './remote-action';
import { loadContracts, type LoadedProduct, type LoadedRequirement } from './tool-dependencies';
import { type LoadedSubscription, ZToolSubscriptions, loadSubscriptions } from './tool-subscriptions';

// Their home is remote-action.ts; re-exported for the modules that still import them from here.
export {
  ParticipantCallError,
  ParticipantUnavailableError,
  type RemoteActionInfo,
  type RunCall,
} from './remote-action';

export interface LoadedAction {
  tool: string;
  /** Action name (kebab-case). */
  name: string;
  /** `tool/action`, the canonical form shown to LLMs (seed 000). */
  qualifiedName: string;
  /** `tool_action`, the form providers accept as a function name. */
  providerName: string;
  description: string;
  level: Level;
  /** JSON Schema of the args; always `type: "object"` at the top. */
  inputSchema: Record<string, unknown>;
  /** JSON Schema of the output, when the action declares one (ActionDefinition.output); `type: "object"`. */
  outputSchema?: Record<string, unknown>;
  parseArgs(args: unknown): ParseArgsResult;
  /**
   * Isolated actions only: parseArgs checks no more than the shape there, the
   * tool's schema is applied in its worker. A dry run asks this for the full check.
   */
  checkArgs?: (args: Record<string, unknown>, stop?: AbortSignal) => Promise<ParseArgsResult>;
  /**
   * Runs the action on args already accepted by parseArgs; returns its output.
   * `stop` is aborted when the caller gives up on the run (TOOL_TIMEOUT_MS):
   * an isolated action then stops its worker; an in-process one cannot be stopped.
   */
  run(args: Record<string, unknown>, ctx: ToolContext, stop?: AbortSignal, call?: RunCall): Promise<unknown>;
  /** The resource a read-level action declares it will read (ActionDefinition.prefetch). */
  prefetch?: (args: Record<string, unknown>) => string | undefined;
  /** A write-level action whose one write commits on its own, with its audit entry (ActionDefinition.singleWrite). */
  singleWrite?: true;
  /** A participant's action (a remote tool, API.md "Participants"); absent for bundled and TOOLS_DIR tools. */
  remote?: RemoteActionInfo;
  /** Coordination contracts (ActionDefinition.requires/produces, src/core/tool-dependencies.ts). */
  requires?: readonly LoadedRequirement[];
  produces?: readonly LoadedProduct[];
}

export type ParseArgsResult =
  { ok: true; value: Record<string, unknown> } | { ok: false; path: string; message: string };

export interface LoadedTool {
  name: string;
  version: string;
  description: string;
  /** Sorted by name. */
  actions: readonly LoadedAction[];
  /** The file the tool was loaded from. */
  source: string;
  /** Its handlers for resource events (ToolDefinition.on); in-process tools only. */
  subscriptions?: readonly LoadedSubscription[];
}

// ---- Small helpers -------------------------------------------------------------

type UnknownRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is UnknownRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** By name, in naming.ts's locale-independent order. */
export function byName<T extends { name: string }>(a: T, b: T): number {
  return compareNames(a.name, b.name);
}

/** Thrown while loading one module; the module is skipped with this reason. */
export class SkipModule extends Error {}

export function checkName(kind: 'tool' | 'action', name: string): void {
  if (!TOOL_NAME_RE.test(name)) {
    throw new SkipModule(`${kind} name "${name}" is not kebab-case (${String(TOOL_NAME_RE)})`);
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new SkipModule(`${kind} name "${name}" is longer than ${MAX_NAME_LENGTH} characters`);
  }
}

/** `a.b.0: message`-style location of a zod issue; an unknown key is named itself. */
function issueLocation(issue: z.core.$ZodIssue): { path: string; message: string } {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  return { path: path.length > 0 ? path.join('.') : 'args', message: issue.message };
}

function parseOrSkip<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const where = first ? issueLocation(first) : { path: what, message: 'invalid' };
  throw new SkipModule(`${what}: ${where.path === 'args' ? '' : `${where.path}: `}${where.message}`);
}

// ---- Module shapes -------------------------------------------------------------

const ZLevel = z.literal([1, 2, 3]);

/** zod 4 schemas by shape rather than instanceof, so a tool may bring its own copy of zod 4. */
function isZodSchema(value: unknown): value is z.ZodType {
  return isRecord(value) && typeof value.safeParse === 'function' && isRecord(value._zod);
}

const ZActionDefinition = z.object({
  description: z.string(),
  level: ZLevel,
  input: z.custom<z.ZodType>(isZodSchema, 'must be a zod 4 schema'),
  handler: z.custom<ActionDefinition['handler']>((v) => typeof v === 'function', 'must be a function'),
  prefetch: z
    .custom<NonNullable<ActionDefinition['prefetch']>>((v) => typeof v === 'function', 'must be a function')
    .optional(),
  output: z.custom<z.ZodType>(isZodSchema, 'must be a zod 4 schema').optional(),
  singleWrite: z.boolean().optional(),
  requires: z
    .array(
      z.object({
        resource: z.string(),
        createdBy: z.string().optional(),
        schema: z.custom<z.ZodType>(isZodSchema, 'must be a zod 4 schema').optional(),
      }),
    )
    .optional(),
  produces: z
    .array(
      z.object({
        resource: z.string(),
        schema: z.custom<z.ZodType>(isZodSchema, 'must be a zod 4 schema').optional(),
      }),
    )
    .optional(),
});

const ZToolDefinition = z.object({
  name: z.string(),
  version: z.string(),
  description: z.string(),
  actions: z.record(z.string(), ZActionDefinition),
  on: ZToolSubscriptions,
});

const ZToolIdentity = z.object({
  name: z.string(),
  version: z.string(),
  capabilities: z.array(z.string()).min(1, 'must list at least one capability'),
  description: z.string().optional(),
  levels: z.record(z.string(), ZLevel).optional(),
  descriptions: z.record(z.string(), z.string()).optional(),
});

function isClassLike(value: unknown): value is ToolClass {
  if (typeof value !== 'function') return false;
  const proto: unknown = value.prototype;
  if (isRecord(proto) && typeof proto.execute === 'function') return true;
  if ('identity' in value && isRecord(value.identity)) return true;
  // A class whose execute is not on the prototype must still never be called as a factory.
  return /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/** The module's export, with the factory form already applied. */
async function resolveExport(mod: unknown): Promise<unknown> {
  const exported = isRecord(mod) && mod.default !== undefined ? mod.default : mod;
  if (typeof exported !== 'function' || isClassLike(exported)) return exported;
  const produced: unknown = await (exported as (s: typeof sdk) => unknown)(sdk);
  return isRecord(produced) && produced.default !== undefined ? produced.default : produced;
}

// ---- Building actions ------------------------------------------------------------

/**
 * The JSON Schema published for an action's args ('input': what a caller
 * sends, before defaults and transforms) or output ('output': what the
 * caller receives, after them); refuses anything but an object (MCP's
 * inputSchema and outputSchema are object schemas).
 */
function objectJsonSchema(schema: z.ZodType, io: 'input' | 'output'): UnknownRecord {
  let json: UnknownRecord;
  try {
    json = { ...z.toJSONSchema(schema, { io, unrepresentable: 'any' }) };
  } catch (err) {
    throw new SkipModule(`${io} schema cannot be converted to JSON Schema (${errorMessage(err)})`);
  }
  if (json.type !== 'object') {
    throw new SkipModule(`${io} schema must be an object schema, got JSON Schema type ${JSON.stringify(json.type)}`);
  }
  // Provider function definitions (OpenAI, Anthropic, MCP) take a bare schema.
  delete json.$schema;
  return json;
}

function argsJsonSchema(schema: z.ZodType): UnknownRecord {
  return objectJsonSchema(schema, 'input');
}

function argsParser(schema: z.ZodType): (args: unknown) => ParseArgsResult {
  return (args) => {
    const result = schema.safeParse(args ?? {});
    if (!result.success) {
      const first = result.error.issues[0];
      return { ok: false, ...(first ? issueLocation(first) : { path: 'args', message: 'Invalid input' }) };
    }
    if (!isRecord(result.data)) return { ok: false, path: 'args', message: 'must be an object' };
    return { ok: true, value: result.data };
  };
}

interface ActionSpec {
  tool: string;
  name: string;
  description: string;
  level: Level;
  schema: z.ZodType;
  /** The declared output schema, if any. */
  output?: z.ZodType;
  run: LoadedAction['run'];
  prefetch?: LoadedAction['prefetch'];
  singleWrite?: boolean;
  contracts?: Pick<ActionDefinition, 'requires' | 'produces'>;
}

/** The action's contracts, loaded; a bad declaration skips the module with its reason. */
function contractsOf(spec: ActionSpec, inputSchema: UnknownRecord): Pick<LoadedAction, 'requires' | 'produces'> {
  if (!spec.contracts) return {};
  try {
    return loadContracts(spec.contracts, inputSchema, `action "${spec.name}"`);
  } catch (err) {
    throw new SkipModule(errorMessage(err).replace(/^Error: /, ''));
  }
}

function makeAction(spec: ActionSpec): LoadedAction {
  checkName('action', spec.name);
  const inputSchema = argsJsonSchema(spec.schema);
  return Object.freeze({
    tool: spec.tool,
    name: spec.name,
    qualifiedName: qualifiedName(spec.tool, spec.name),
    providerName: providerName(spec.tool, spec.name),
    description: spec.description,
    level: spec.level,
    inputSchema,
    ...contractsOf(spec, inputSchema),
    ...(spec.output ? { outputSchema: objectJsonSchema(spec.output, 'output') } : {}),
    parseArgs: argsParser(spec.schema),
    // The output is not checked here: that would add work to every negotiate. The MCP endpoint
    // checks what it hands out as structuredContent against outputSchema (tool-results.ts).
    run: spec.run,
    // Only reads may be answered early: a write must see its transaction's state.
    ...(spec.prefetch && spec.level === 1 ? { prefetch: spec.prefetch } : {}),
    // Only a write-level action has a write to send on its own.
    ...(spec.singleWrite === true && spec.level > 1 ? { singleWrite: true as const } : {}),
  });
}

function freezeTool(tool: Omit<LoadedTool, 'actions'>, actions: LoadedAction[]): LoadedTool {
  if (actions.length === 0) throw new SkipModule(`tool "${tool.name}" declares no actions`);
  return Object.freeze({ ...tool, actions: Object.freeze([...actions].sort(byName)) });
}

function fromDefinition(value: unknown, source: string): LoadedTool {
  const def = parseOrSkip(ZToolDefinition, value, 'tool definition');
  checkName('tool', def.name);
  const actions = Object.entries(def.actions).map(([name, action]) =>
    makeAction({
      tool: def.name,
      name,
      description: action.description,
      level: action.level,
      schema: action.input,
      output: action.output,
      // The handler sees the parsed args in ctx.args too, whatever the caller put there.
      run: async (args, ctx) => await action.handler(args, { ...ctx, action: name, args }),
      prefetch: action.prefetch,
      singleWrite: action.singleWrite,
      contracts: { requires: action.requires, produces: action.produces },
    }),
  );
  const subscriptions = loadSubscriptions(def.on);
  const tool = { name: def.name, version: def.version, description: def.description, source };
  return freezeTool(
    subscriptions.length > 0 ? { ...tool, subscriptions: Object.freeze(subscriptions) } : tool,
    actions,
  );
}

/** Class-form capabilities take any JSON object: the class validates its own args (seed 002). */
const ZAnyArgs = z.record(z.string(), z.unknown());

function classIdentity(cls: ToolClass): unknown {
  if (isRecord(cls.identity)) return cls.identity;
  // The seed's constructor passes the identity to BaseTool; accept that when no static one exists.
  const instance: unknown = new cls();
  return isRecord(instance) ? instance.identity : undefined;
}

/** A class tool reports failure as `success: false`; the service reports it as invalid_args. */
function unwrapToolResult(result: unknown, qualifiedName: string): unknown {
  if (!isRecord(result) || typeof result.success !== 'boolean') {
    throw new Error(`${qualifiedName} returned no ToolResult`);
  }
  if (result.success) return result.output;
  const reason = typeof result.error === 'string' && result.error !== '' ? result.error : `${qualifiedName} failed`;
  throw new ToolError('invalid_args', reason);
}

function fromClass(cls: ToolClass, source: string): LoadedTool {
  const identity = parseOrSkip(ZToolIdentity, classIdentity(cls), 'class identity');
  checkName('tool', identity.name);
  const unique = new Set(identity.capabilities);
  if (unique.size !== identity.capabilities.length) throw new SkipModule('capabilities contain duplicates');
  const actions = [...unique].map((cap) =>
    makeAction({
      tool: identity.name,
      name: cap,
      description: identity.descriptions?.[cap] ?? `${cap.replace(/-/g, ' ')} (${identity.name})`,
      level: identity.levels?.[cap] ?? levelFromVerb(cap),
      schema: ZAnyArgs,
      run: async (args, ctx) =>
        unwrapToolResult(await new cls().execute(cap, { ...ctx, action: cap, args }), `${identity.name}/${cap}`),
    }),
  );
  const description = identity.description ?? `${identity.name} (class-form tool)`;
  return freezeTool({ name: identity.name, version: identity.version, description, source }, actions);
}

export async function loadToolModule(file: string): Promise<LoadedTool> {
  let mod: unknown;
  try {
    // The caller's own require, not createRequire: jest and tsx hook it to load .ts tool modules.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require(file);
  } catch (err) {
    const hint =
      file.endsWith('.ts') && err instanceof SyntaxError
        ? ' (a .ts module needs a TypeScript loader such as tsx; compile it to .js for plain Node)'
        : '';
    throw new SkipModule(`failed to load: ${errorMessage(err)}${hint}`);
  }
  const exported = await resolveExport(mod);
  if (isClassLike(exported)) return fromClass(exported, file);
  if (isRecord(exported) && 'actions' in exported) return fromDefinition(exported, file);
  throw new SkipModule('exports neither a tool definition (defineTool), a BaseTool class nor a factory (sdk) => tool');
}
