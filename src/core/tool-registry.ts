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
 *
 * Bundled tools run in-process. TOOLS_DIR modules are third-party code: each
 * is loaded and run in its own worker thread (tool-sandbox/), so one that
 * spins at load time is skipped and one that spins in a handler is stopped
 * while the service's event loop keeps answering.
 */
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { basename, resolve } from 'node:path';
import { refuseCycles } from './tool-dependencies';
import type { ToolLogger } from './tool-interface';
import { evictModuleCache, findModuleFiles, isMissingDir } from './tool-module-files';
import { SkipModule, errorMessage, loadToolModule, type LoadedTool } from './tool-module';
import type { ToolHost } from './tool-sandbox/host';
import { loadIsolatedTool } from './tool-sandbox/isolated-tool';

import { makeToolSet, type ToolSet } from './tool-set';

export type { LoadedAction, LoadedTool, ParseArgsResult } from './tool-module';
export type { ToolSet } from './tool-set';

export interface ToolRegistryOptions {
  /** Default: the repository's `tools/` directory (`dist/tools` when running from `dist/`). */
  bundledDir?: string;
  /** TOOLS_DIR: third-party tools, loaded after the bundled ones. */
  extraDir?: string;
  hotReload: boolean;
  /** Quiet time after the last file event before reloading; editors write in bursts. */
  debounceMs?: number;
  logger: ToolLogger;
  /** A TOOLS_DIR module still loading after this is skipped and its worker stopped. Default 10 s. */
  loadTimeoutMs?: number;
  /**
   * Default true. false loads TOOLS_DIR in-process like the bundled tools:
   * only for measuring what isolation costs (bench/isolation-bench.ts).
   */
  isolateToolsDir?: boolean;
}

/** src/core -> tools, and dist/src/core -> dist/tools: the same relative step. */
const DEFAULT_BUNDLED_DIR = resolve(__dirname, '..', '..', 'tools');
const DEFAULT_DEBOUNCE_MS = 250;
/** Generous: a worker loading a .ts module under tsx on a busy 2-core machine takes about a second. */
const DEFAULT_LOAD_TIMEOUT_MS = 10_000;

/** Why a tool set changed: this replica's own reload, or another replica's word that it changed. */
export type ToolSetChangeCause = 'local' | 'remote';

/**
 * Tools that live elsewhere (participants, API.md "Participants"), published
 * beside the bundled and TOOLS_DIR ones. `sync` reads what another replica
 * changed and answers the tools then; the registry calls it when another
 * replica says the tool set changed (reload('remote')).
 */
export interface RemoteToolSource {
  sync(): Promise<readonly LoadedTool[]>;
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
  /** The sandboxes of the current generation's TOOLS_DIR tools. */
  private hosts: ToolHost[] = [];
  /** The bundled and TOOLS_DIR tools of the last scan. */
  private local: LoadedTool[] = [];
  /** The participants' tools (setRemoteTools). */
  private remote: readonly LoadedTool[] = [];
  private remoteSource: RemoteToolSource | undefined;

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

  /**
   * Rescans both directories now and swaps the new set in. On failure the old set stays.
   * `cause` travels with the 'change' event: 'remote' when another replica said the tool set
   * changed (so listeners do not announce it back to the replicas).
   */
  reload(cause: ToolSetChangeCause = 'local'): Promise<ToolSet> {
    return this.enqueue(() => this.rebuild(true, cause));
  }

  /** Where another replica's participant changes are read from (see RemoteToolSource). */
  attachRemoteSource(source: RemoteToolSource): void {
    this.remoteSource = source;
  }

  /** Whether a bundled or TOOLS_DIR tool has this name (a participant may not take it). */
  hasLocalTool(name: string): boolean {
    return this.local.some((t) => t.name === name);
  }

  /**
   * Publishes the participants' tools: a new generation of the set, with the
   * loaded tools as they are (no rescan), and the same 'change' event as a
   * reload, so routers, caches and MCP list_changed follow. Before the first
   * load it only keeps them: that load publishes them.
   */
  setRemoteTools(tools: readonly LoadedTool[], cause: ToolSetChangeCause = 'local'): Promise<ToolSet | undefined> {
    this.remote = tools;
    if (!this.loading) return Promise.resolve(undefined);
    return this.enqueue(async () => {
      await this.loading;
      return this.publish(this.merged(), cause, true);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    await this.queue;
    for (const host of this.hosts) host.close();
    this.hosts = [];
  }

  private enqueue(task: () => Promise<ToolSet>): Promise<ToolSet> {
    const next = this.queue.then(task);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async rebuild(emitChange: boolean, cause: ToolSetChangeCause = 'local'): Promise<ToolSet> {
    const hosts: ToolHost[] = [];
    try {
      this.local = await this.loadAll(hosts);
    } catch (err) {
      for (const host of hosts) host.close();
      this.logger.error({ err }, `Tool reload failed, keeping the previous tool set: ${errorMessage(err)}`);
      throw err;
    }
    if (cause === 'remote' && this.remoteSource) {
      // Another replica's change may be a participant's: read it before publishing, so the set is whole.
      this.remote = await this.remoteSource.sync().catch((err: unknown) => {
        this.logger.warn({ err }, `Reading the participants again failed: ${errorMessage(err)}`);
        return this.remote;
      });
    }
    // Calls in flight on the previous generation finish in their workers first.
    for (const host of this.hosts) host.retire();
    this.hosts = hosts;
    return this.publish(this.merged(), cause, emitChange);
  }

  /** The loaded tools and the participants'; a participant named like a loaded tool is left out. */
  private merged(): LoadedTool[] {
    const names = new Set(this.local.map((t) => t.name));
    const remote = this.remote.filter((t) => {
      if (!names.has(t.name)) return true;
      this.logger.warn({ tool: t.name }, `Participant ${t.name} is hidden: a loaded tool has that name`);
      return false;
    });
    return [...this.local, ...remote];
  }

  private publish(tools: LoadedTool[], cause: ToolSetChangeCause, emitChange: boolean): ToolSet {
    const set = makeToolSet((this.set?.generation ?? 0) + 1, tools);
    this.set = set; // the one assignment that publishes the new generation
    this.logger.info({ generation: set.generation, tools: set.tools.map((t) => t.name) }, 'Tools loaded');
    if (emitChange) this.emitChange(set, cause);
    return set;
  }

  private emitChange(set: ToolSet, cause: ToolSetChangeCause): void {
    try {
      this.emit('change', set, cause);
    } catch (err) {
      // A failing listener must not turn a good reload into a failed one.
      this.logger.error({ err }, `Tool set 'change' listener failed: ${errorMessage(err)}`);
    }
  }

  /** Loads every module; the sandboxes of the tools kept are pushed to `hosts`. */
  private async loadAll(hosts: ToolHost[]): Promise<LoadedTool[]> {
    const isolate = this.opts.isolateToolsDir ?? true;
    const dirs = this.extraDir && !isolate ? [this.bundledDir, this.extraDir] : [this.bundledDir];
    evictModuleCache(dirs);
    const bundledFiles = await findModuleFiles(this.bundledDir);
    const extraFiles = await this.extraFiles();
    const loaded = [
      ...(await Promise.all(bundledFiles.map((file) => this.tryLoad(file)))),
      // Each sandbox loads in its own thread, so a slow module delays only itself.
      ...(await Promise.all(extraFiles.map((file) => (isolate ? this.tryLoadIsolated(file) : this.tryLoad(file))))),
    ];
    const tools = new Map<string, { tool: LoadedTool; host?: ToolHost }>();
    for (const [i, entry] of loaded.entries()) {
      const file = [...bundledFiles, ...extraFiles][i]!;
      if (!entry) continue;
      const existing = tools.get(entry.tool.name);
      if (existing) {
        entry.host?.close();
        this.skip(file, `tool "${entry.tool.name}" is already provided by ${existing.tool.source}`);
        continue;
      }
      tools.set(entry.tool.name, entry);
    }
    return this.withoutCycles([...tools.values()], bundledFiles, hosts);
  }

  /** The loaded tools less those whose contracts form a cycle (TOOLS_DIR's before bundled ones); logs each kept. */
  private withoutCycles(
    loaded: { tool: LoadedTool; host?: ToolHost }[],
    bundledFiles: string[],
    hosts: ToolHost[],
  ): LoadedTool[] {
    const entries = loaded.map((e) => ({ ...e, name: e.tool.name, actions: e.tool.actions }));
    const { kept, refused } = refuseCycles(entries, (e) => bundledFiles.includes(e.tool.source));
    for (const { tool: entry, reason } of refused) {
      entry.host?.close();
      this.skip(entry.tool.source, reason);
    }
    for (const { tool, host } of kept) {
      if (host) hosts.push(host);
      this.logger.info(
        { tool: tool.name, version: tool.version, source: tool.source, isolated: host !== undefined },
        `Loaded: ${tool.name}`,
      );
    }
    return kept.map((e) => e.tool);
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

  private async tryLoad(file: string): Promise<{ tool: LoadedTool; host?: ToolHost } | undefined> {
    try {
      return { tool: await loadToolModule(file) };
    } catch (err) {
      this.skip(file, err instanceof SkipModule ? err.message : errorMessage(err));
      return undefined;
    }
  }

  private async tryLoadIsolated(file: string): Promise<{ tool: LoadedTool; host: ToolHost } | undefined> {
    try {
      return await loadIsolatedTool(file, this.opts.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS, this.logger);
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
