/**
 * The participants as this replica runs them: for each, its record and
 * actions as the store holds them, its runtime (connector, breaker, status)
 * and its tool in the registry. Everything that changes a participant ends
 * in install(), which rebuilds its tool and publishes the registry's next
 * generation; another replica's change arrives through sync() (the registry
 * calls it when another replica says the tool set changed), which reloads
 * every participant whose version it has not seen.
 *
 * Refresh (manual, periodic, or the upstream's tools/list_changed) lists the
 * upstream's tools and applies pinning (participant-pinning.ts) with the
 * participant's row locked, so replicas refreshing together quarantine once
 * and audit once.
 */
import { SYSTEM_CHAIN, type AuditService } from '../core/audit';
import type { LoadedTool } from '../core/tool-module';
import type { RemoteToolSource, ToolRegistry } from '../core/tool-registry';
import type { ToolLogger } from '../core/tool-interface';
import type { ParticipantMetrics } from '../observability/participant-metrics';
import { connectionKey, makeConnector } from './participant-connectors';
import { pin } from './participant-pinning';
import type { ActionRecord, ParticipantRecord, ParticipantSecrets, ParticipantStore } from './participant-records';
import { ParticipantRuntime } from './participant-runtime';
import { participantTool } from './participant-tools';
import type { SecretBox } from './secrets';

export interface LiveDeps {
  store: ParticipantStore;
  registry: ToolRegistry;
  audit: AuditService;
  box: () => SecretBox;
  fetch: typeof fetch;
  logger: ToolLogger;
  metrics: ParticipantMetrics | undefined;
  toolTimeoutMs: number;
  /** An owner's stored headers for a participant (cached by the service). */
  credentials: (participant: string, owner: string) => Promise<Record<string, string> | undefined>;
}

interface Live {
  record: ParticipantRecord;
  actions: ActionRecord[];
  runtime: ParticipantRuntime | undefined;
  key: string;
  tool: LoadedTool | undefined;
}

const NO_SECRETS: ParticipantSecrets = { headers: {}, env: {} };
/** An upstream's tools/list_changed comes in bursts: one refresh for a burst. */
const CHANGE_DEBOUNCE_MS = 100;

export class ParticipantLive implements RemoteToolSource {
  private readonly live = new Map<string, Live>();
  private timer: NodeJS.Timeout | undefined;
  private readonly pendingRefresh = new Map<string, NodeJS.Timeout>();
  private readonly refreshing = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly deps: LiveDeps) {}

  get(name: string): Live | undefined {
    return this.live.get(name);
  }

  secretsOf(record: ParticipantRecord): ParticipantSecrets {
    return record.sealedSecrets === null ? NO_SECRETS : this.deps.box().open<ParticipantSecrets>(record.sealedSecrets);
  }

  /** Loads every participant from the store and publishes them; their upstreams are reached in the background. */
  async load(): Promise<void> {
    const records = await this.deps.store.list();
    for (const record of records) this.put(record, await this.deps.store.actions(record.name));
    await this.publish();
    for (const record of records) if (record.enabled) this.refreshSoon(record.name, 0);
  }

  startTimer(seconds: number): void {
    if (seconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      for (const [name, l] of this.live) if (l.record.enabled) this.refreshSoon(name, 0);
    }, seconds * 1000);
    this.timer.unref();
  }

  /** Installs the participant as the store now holds it (after a change on this replica) and publishes. */
  async install(name: string): Promise<void> {
    const record = await this.deps.store.get(name);
    if (!record) await this.drop(name);
    else this.put(record, await this.deps.store.actions(name));
    await this.publish();
  }

  async drop(name: string): Promise<void> {
    const l = this.live.get(name);
    this.live.delete(name);
    this.deps.metrics?.forget(name);
    await l?.runtime?.close();
  }

  /** RemoteToolSource: another replica changed something; reload what differs from the store. */
  async sync(): Promise<readonly LoadedTool[]> {
    const versions = await this.deps.store.versions();
    for (const name of [...this.live.keys()]) if (!versions.has(name)) await this.drop(name);
    for (const [name, version] of versions) {
      if (this.live.get(name)?.record.version === version) continue;
      const record = await this.deps.store.get(name);
      if (!record) continue;
      const connect = this.put(record, await this.deps.store.actions(name));
      if (connect) void this.connectQuietly(name);
    }
    return this.tools();
  }

  /**
   * Lists the upstream's tools now and applies pinning; publishes when anything changed. A participant's
   * refreshes run one after another, so a listing older than another is never written after it.
   */
  refresh(name: string): Promise<void> {
    const next = (this.refreshing.get(name) ?? Promise.resolve()).then(() => this.refreshNow(name));
    const settled = next.catch(() => undefined);
    this.refreshing.set(name, settled);
    void settled.then(() => {
      if (this.refreshing.get(name) === settled) this.refreshing.delete(name);
    });
    return next;
  }

  private async refreshNow(name: string): Promise<void> {
    const l = this.live.get(name);
    if (!l?.runtime || this.closed) return;
    let listed;
    try {
      listed = await l.runtime.listTools();
    } catch (err) {
      this.deps.logger.warn({ participant: name, err: (err as Error).message }, `Listing ${name}'s tools failed`);
      await this.storeState(name, l.runtime);
      return;
    }
    const initial = l.record.refreshedAt === null;
    const outcome = await this.deps.store.updateActions(name, (current) => {
      const pinned = pin(current, listed, initial);
      return { ...pinned, result: pinned };
    });
    await this.storeState(name, l.runtime, Date.now());
    if (!outcome) return;
    for (const action of outcome.quarantined) {
      this.deps.logger.warn(
        { participant: name, action },
        `Participant ${name}: ${action} changed upstream; quarantined`,
      );
      await this.deps.audit.record('participant.action_quarantined', {
        conversationId: SYSTEM_CHAIN,
        actor: 'system:refresh',
        requestId: '-',
        outcome: 'success',
        tool: name,
        action,
      });
    }
    // refreshedAt changed at least: reinstall (and publish when the actions changed).
    const record = await this.deps.store.get(name);
    if (!record) return;
    const actions = outcome.changed ? await this.deps.store.actions(name) : l.actions;
    this.put(record, actions);
    if (outcome.changed) await this.publish();
  }

  /** A refresh after `delayMs`, one per participant at a time; failures are logged. */
  refreshSoon(name: string, delayMs = CHANGE_DEBOUNCE_MS): void {
    if (this.closed || this.pendingRefresh.has(name)) return;
    const t = setTimeout(() => {
      this.pendingRefresh.delete(name);
      this.refresh(name).catch((err: unknown) =>
        this.deps.logger.warn({ participant: name, err: (err as Error).message }, `Refreshing ${name} failed`),
      );
    }, delayMs);
    t.unref();
    this.pendingRefresh.set(name, t);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const t of this.pendingRefresh.values()) clearTimeout(t);
    this.pendingRefresh.clear();
    const all = [...this.live.values()];
    this.live.clear();
    await Promise.all(all.map((l) => l.runtime?.close() ?? Promise.resolve()));
  }

  /** Puts a participant in place; true when it got a new runtime (to connect). */
  private put(record: ParticipantRecord, actions: ActionRecord[]): boolean {
    const previous = this.live.get(record.name);
    const key = connectionKey(record, this.secretsOf(record));
    const keep = previous && previous.key === key ? previous.runtime : undefined;
    if (previous?.runtime && previous.runtime !== keep) void previous.runtime.close();
    const runtime = keep ?? (record.enabled ? this.newRuntime(record) : undefined);
    if (!runtime) this.deps.metrics?.forget(record.name);
    const tool = runtime
      ? participantTool({
          record,
          actions,
          caller: runtime,
          credentials: (owner) => this.deps.credentials(record.name, owner),
          defaultTimeoutMs: this.deps.toolTimeoutMs,
          logger: this.deps.logger,
        })
      : undefined;
    this.live.set(record.name, { record, actions, runtime, key, tool });
    return runtime !== undefined && runtime !== keep;
  }

  private newRuntime(record: ParticipantRecord): ParticipantRuntime {
    const logger = this.deps.logger;
    const secrets = this.secretsOf(record);
    return new ParticipantRuntime({
      participant: record.name,
      makeConnector: () => makeConnector(record, secrets, { fetch: this.deps.fetch, logger }),
      logger,
      metrics: this.deps.metrics,
      onToolsChanged: () => this.refreshSoon(record.name),
    });
  }

  private async connectQuietly(name: string): Promise<void> {
    await this.live
      .get(name)
      ?.runtime?.start()
      .catch(() => undefined);
  }

  private async storeState(name: string, runtime: ParticipantRuntime, refreshedAt?: number): Promise<void> {
    const info = runtime.info();
    await this.deps.store.recordState(name, {
      status: runtime.status,
      lastError: runtime.lastError,
      ...(info.protocolVersion !== undefined ? { protocolVersion: info.protocolVersion } : {}),
      ...(info.serverInfo !== undefined ? { serverInfo: info.serverInfo } : {}),
      ...(refreshedAt !== undefined ? { refreshedAt } : {}),
    });
  }

  tools(): LoadedTool[] {
    return [...this.live.values()].flatMap((l) => (l.tool ? [l.tool] : []));
  }

  private async publish(): Promise<void> {
    await this.deps.registry.setRemoteTools(this.tools());
  }
}
