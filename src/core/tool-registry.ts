/**
 * The tool registry (seed 002, "Tool Registry"): discovers tool modules in the
 * bundled `tools/` directory and in TOOLS_DIR, validates them, and publishes
 * them as an immutable ToolSet. With hot reload, a change on disk rebuilds the
 * whole set and swaps it in with one assignment, so a caller always sees one
 * consistent generation and calls in flight keep the actions they started with.
 *
 * A module exports (default export or module.exports) one of:
 * - a ToolDefinition (`defineTool`), the toolset form of seed 001;
 * - a class extending BaseTool with a static `identity`, the class form of seed 002;
 * - a factory `(sdk) => definition | class`, so a TOOLS_DIR module needs no
 *   node_modules of its own.
 */
import { EventEmitter } from 'node:events';
import { watch, type Dirent, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { MAX_NAME_LENGTH, TOOL_NAME_RE, providerName, qualifiedName } from './naming';
import {
  ToolError,
  levelFromVerb,
  sdk,
  type ActionDefinition,
  type Level,
  type ToolClass,
  type ToolContext,
  type ToolLogger,
} from './tool-interface';

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
  parseArgs(args: unknown): ParseArgsResult;
  /** Runs the action on args already accepted by parseArgs; returns its output. */
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
  /** The resource a read-level action declares it will read (ActionDefinition.prefetch). */
  prefetch?: (args: Record<string, unknown>) => string | undefined;
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
}

export interface ToolSet {
  readonly generation: number;
  /** Sorted by name. */
  readonly tools: readonly LoadedTool[];
  readonly byName: ReadonlyMap<string, LoadedTool>;
  /** Every action of every tool, in tool order then action order. */
  readonly actions: readonly LoadedAction[];
}

export interface ToolRegistryOptions {
  /** Default: the repository's `tools/` directory (`dist/tools` when running from `dist/`). */
  bundledDir?: string;
  /** TOOLS_DIR: third-party tools, loaded after the bundled ones. */
  extraDir?: string;
  hotReload: boolean;
  /** Quiet time after the last file event before reloading; editors write in bursts. */
  debounceMs?: number;
  logger: ToolLogger;
}

/** src/core -> tools, and dist/src/core -> dist/tools: the same relative step. */
const DEFAULT_BUNDLED_DIR = resolve(__dirname, '..', '..', 'tools');
const DEFAULT_DEBOUNCE_MS = 250;

// ---- Small helpers -------------------------------------------------------------

type UnknownRecord = Record<string, unknown>;

function isRecord(value: unknown): value is UnknownRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function byName<T extends { name: string }>(a: T, b: T): number {
  // Code-unit order, not localeCompare: the order must not depend on the host's locale.
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Thrown while loading one module; the module is skipped with this reason. */
class SkipModule extends Error {}

function checkName(kind: 'tool' | 'action', name: string): void {
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
});

const ZToolDefinition = z.object({
  name: z.string(),
  version: z.string(),
  description: z.string(),
  actions: z.record(z.string(), ZActionDefinition),
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

/** The JSON Schema published for an action's args; refuses anything but an object. */
function argsJsonSchema(schema: z.ZodType): UnknownRecord {
  let json: UnknownRecord;
  try {
    // 'input': the schema describes what a caller sends, before defaults and transforms.
    json = { ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) };
  } catch (err) {
    throw new SkipModule(`input schema cannot be converted to JSON Schema (${errorMessage(err)})`);
  }
  if (json.type !== 'object') {
    throw new SkipModule(`input schema must be an object schema, got JSON Schema type ${JSON.stringify(json.type)}`);
  }
  // Provider function definitions (OpenAI, Anthropic, MCP) take a bare schema.
  delete json.$schema;
  return json;
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
  run: LoadedAction['run'];
  prefetch?: LoadedAction['prefetch'];
}

function makeAction(spec: ActionSpec): LoadedAction {
  checkName('action', spec.name);
  return Object.freeze({
    tool: spec.tool,
    name: spec.name,
    qualifiedName: qualifiedName(spec.tool, spec.name),
    providerName: providerName(spec.tool, spec.name),
    description: spec.description,
    level: spec.level,
    inputSchema: argsJsonSchema(spec.schema),
    parseArgs: argsParser(spec.schema),
    run: spec.run,
    // Only reads may be answered early: a write must see its transaction's state.
    ...(spec.prefetch && spec.level === 1 ? { prefetch: spec.prefetch } : {}),
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
      // The handler sees the parsed args in ctx.args too, whatever the caller put there.
      run: async (args, ctx) => await action.handler(args, { ...ctx, action: name, args }),
      prefetch: action.prefetch,
    }),
  );
  return freezeTool({ name: def.name, version: def.version, description: def.description, source }, actions);
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

async function loadToolModule(file: string): Promise<LoadedTool> {
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

// ---- Finding module files -----------------------------------------------------------

const MODULE_FILE = /\.(js|cjs|ts)$/;
const INDEX_FILES = ['index.js', 'index.cjs', 'index.ts'];

/** Names starting with `_` or `.` are private helpers, tests are not tools. */
function isHidden(name: string): boolean {
  return name.startsWith('_') || name.startsWith('.') || name === 'node_modules';
}

function isModuleFileName(name: string): boolean {
  return MODULE_FILE.test(name) && !name.endsWith('.d.ts') && !/\.(test|spec)\./.test(name);
}

async function entryKind(dir: string, entry: Dirent): Promise<'file' | 'dir' | 'other'> {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'dir';
  if (!entry.isSymbolicLink()) return 'other';
  try {
    const target = await stat(join(dir, entry.name));
    return target.isFile() ? 'file' : target.isDirectory() ? 'dir' : 'other';
  } catch {
    return 'other'; // a dangling link is not a module
  }
}

async function findIndex(dir: string): Promise<string | undefined> {
  for (const name of INDEX_FILES) {
    const file = join(dir, name);
    const found = await stat(file).then(
      (s) => s.isFile(),
      () => false,
    );
    if (found) return file;
  }
  return undefined;
}

/** Module files of one directory, sorted so that load order (and duplicate resolution) is stable. */
async function findModuleFiles(dir: string): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort(byName);
  const files: string[] = [];
  for (const entry of entries) {
    if (isHidden(entry.name)) continue;
    const kind = await entryKind(dir, entry);
    if (kind === 'file' && isModuleFileName(entry.name)) files.push(join(dir, entry.name));
    if (kind === 'dir') {
      const index = await findIndex(join(dir, entry.name));
      if (index) files.push(index);
    }
  }
  return files;
}

/**
 * Forget the modules under the tool directories so that the next require()
 * reads them from disk again (plain Node caches them forever). Their
 * dependencies in node_modules and the tool interface itself stay cached, so
 * ToolError keeps one identity across reloads.
 */
function evictModuleCache(dirs: readonly string[]): void {
  for (const key of Object.keys(require.cache)) {
    if (key.includes(`${sep}node_modules${sep}`)) continue;
    if (dirs.some((dir) => key.startsWith(dir + sep))) delete require.cache[key];
  }
}

function makeToolSet(generation: number, tools: LoadedTool[]): ToolSet {
  const sorted = Object.freeze([...tools].sort(byName));
  return Object.freeze({
    generation,
    tools: sorted,
    byName: new Map(sorted.map((t) => [t.name, t] as const)),
    actions: Object.freeze(sorted.flatMap((t) => t.actions)),
  });
}

function isMissingDir(err: unknown): boolean {
  return isRecord(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR');
}

// ---- The registry -----------------------------------------------------------------

export class ToolRegistry extends EventEmitter {
  private readonly bundledDir: string;
  private readonly extraDir: string | undefined;
  private readonly debounceMs: number;
  private readonly logger: ToolLogger;
  private set: ToolSet | undefined;
  private loading: Promise<ToolSet> | undefined;
  /** Reloads run one after another, so generations are assigned in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly opts: ToolRegistryOptions) {
    super();
    this.bundledDir = resolve(opts.bundledDir ?? DEFAULT_BUNDLED_DIR);
    const extra = opts.extraDir === undefined ? undefined : resolve(opts.extraDir);
    // TOOLS_DIR pointing at the bundled directory would only produce duplicates.
    this.extraDir = extra === this.bundledDir ? undefined : extra;
    this.debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.logger = opts.logger;
  }

  get ready(): boolean {
    return this.set !== undefined;
  }

  current(): ToolSet {
    if (!this.set) throw new Error('Tool registry not loaded yet: call load() first');
    return this.set;
  }

  /** First load; starts the watchers when hot reload is on. Calling it again returns the same load. */
  load(): Promise<ToolSet> {
    this.loading ??= this.enqueue(() => this.rebuild(false)).then((set) => {
      if (this.opts.hotReload && !this.closed) this.startWatching();
      return set;
    });
    return this.loading;
  }

  /** Rescans both directories now and swaps the new set in. On failure the old set stays. */
  reload(): Promise<ToolSet> {
    return this.enqueue(() => this.rebuild(true));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    await this.queue;
  }

  private enqueue(task: () => Promise<ToolSet>): Promise<ToolSet> {
    const next = this.queue.then(task);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async rebuild(emitChange: boolean): Promise<ToolSet> {
    let set: ToolSet;
    try {
      const tools = await this.loadAll();
      set = makeToolSet((this.set?.generation ?? 0) + 1, tools);
    } catch (err) {
      this.logger.error({ err }, `Tool reload failed, keeping the previous tool set: ${errorMessage(err)}`);
      throw err;
    }
    this.set = set; // the one assignment that publishes the new generation
    this.logger.info({ generation: set.generation, tools: set.tools.map((t) => t.name) }, 'Tools loaded');
    if (emitChange) this.emitChange(set);
    return set;
  }

  private emitChange(set: ToolSet): void {
    try {
      this.emit('change', set);
    } catch (err) {
      // A failing listener must not turn a good reload into a failed one.
      this.logger.error({ err }, `Tool set 'change' listener failed: ${errorMessage(err)}`);
    }
  }

  private async loadAll(): Promise<LoadedTool[]> {
    const dirs = this.extraDir ? [this.bundledDir, this.extraDir] : [this.bundledDir];
    evictModuleCache(dirs);
    const files = [...(await findModuleFiles(this.bundledDir)), ...(await this.extraFiles())];
    const tools = new Map<string, LoadedTool>();
    for (const file of files) {
      const tool = await this.tryLoad(file);
      if (!tool) continue;
      const existing = tools.get(tool.name);
      if (existing) {
        this.skip(file, `tool "${tool.name}" is already provided by ${existing.source}`);
        continue;
      }
      tools.set(tool.name, tool);
      this.logger.info({ tool: tool.name, version: tool.version, source: file }, `Loaded: ${tool.name}`);
    }
    return [...tools.values()];
  }

  /** A missing TOOLS_DIR is a warning, not a failure: the bundled tools still serve. */
  private async extraFiles(): Promise<string[]> {
    if (!this.extraDir) return [];
    try {
      return await findModuleFiles(this.extraDir);
    } catch (err) {
      if (!isMissingDir(err)) throw err;
      this.logger.warn({ dir: this.extraDir }, `TOOLS_DIR ${this.extraDir} does not exist; no extra tools loaded`);
      return [];
    }
  }

  private async tryLoad(file: string): Promise<LoadedTool | undefined> {
    try {
      return await loadToolModule(file);
    } catch (err) {
      this.skip(file, err instanceof SkipModule ? err.message : errorMessage(err));
      return undefined;
    }
  }

  private skip(file: string, reason: string): void {
    this.logger.warn({ file, reason }, `Skipped tool module ${basename(file)}: ${reason}`);
  }

  // ---- Hot reload ----

  private startWatching(): void {
    for (const dir of [this.bundledDir, this.extraDir]) {
      if (dir) this.watchDir(dir);
    }
  }

  private watchDir(dir: string): void {
    const onEvent = (): void => this.scheduleReload();
    let watcher: FSWatcher;
    try {
      // Not persistent: watching must never be what keeps the process alive.
      watcher = watch(dir, { recursive: true, persistent: false }, onEvent);
    } catch (err) {
      try {
        // Platforms without recursive watching still see top-level files and folders.
        watcher = watch(dir, { persistent: false }, onEvent);
      } catch {
        this.logger.warn({ dir, err }, `Cannot watch ${dir}; hot reload is off for it`);
        return;
      }
    }
    watcher.on('error', (err) => {
      this.logger.warn({ dir, err }, `Watching ${dir} failed; hot reload is off for it`);
    });
    this.watchers.push(watcher);
  }

  private scheduleReload(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.closed) return;
      // rebuild() has logged the failure and kept the old set; nothing more to do here.
      this.reload().catch(() => undefined);
    }, this.debounceMs);
    this.timer.unref();
  }
}
