/**
 * The MCP change-event bus shared by every replica on one database: what one
 * replica publishes (a tool set changed) reaches the open notification
 * streams of every replica, `subscriptions/listen` (2026-07-28) and the GET
 * stream of 2025-era clients alike.
 *
 * It also keeps the replicas' tool sets together. A replica whose tool set
 * changed (a hot reload of TOOLS_DIR) publishes `tools_list_changed`; every
 * other replica, told of it, first reloads what it serves (its TOOLS_DIR too:
 * replicas of one service share the directory, and only one may watch it),
 * then tells its own listeners, so a client told that the list changed lists
 * the new one. Each replica signs what it publishes with an origin id of its
 * own, so it does not reload for its own change, and a reload made because
 * another replica said so is not announced back (ToolSetChangeCause).
 *
 * On Postgres it is LISTEN/NOTIFY on the database the replicas already share:
 * `publish` is a `pg_notify` on the channel, and one dedicated connection per
 * process LISTENs and hands each event to the local listeners (its own
 * replica's included: Postgres delivers a NOTIFY to the sessions listening,
 * the sender's too, so there is one path for local and remote events). The
 * connection is open while a stream is, and in a running service (the entry
 * file calls hold()) for the replica's whole life, since a replica with no
 * open stream must still hear of another's tool-set change. A NOTIFY is not stored: a
 * replica whose listening connection is down misses what happens meanwhile,
 * so after reconnecting it reloads its tools and tells its listeners that the
 * tools may have changed (a spurious `list_changed` costs a re-list; a missed
 * one leaves a client with a stale list).
 *
 * The embedded PGlite database serves one process only, and all its
 * connections share one session: there the bus is in-process, shared by
 * every app instance on that database (tests run two "replicas" in one
 * process that way), with the same origin rule.
 */
import { randomUUID } from 'node:crypto';
import { Client, type ClientConfig } from 'pg';
import { InMemoryServerEventBus, type ServerEvent, type ServerEventBus } from '@modelcontextprotocol/server';
import type { Database } from '../db/database';
import type { Logger } from '../logger';

/** The NOTIFY channel; the payload is the ServerEvent as JSON. */
export const MCP_EVENTS_CHANNEL = 'mcp_events';

/** Reconnect delays of the LISTEN connection, growing to the last (a database restart takes seconds). */
const RECONNECT_DELAYS_MS = [100, 500, 1000, 2000, 5000];

export interface McpEventBus extends ServerEventBus {
  /** Resolves once events published by other replicas are being received (the LISTEN is in place). */
  ready(): Promise<void>;
  /**
   * Listens from now on for the replica's whole life, not only while a stream is open: a replica must
   * hear of another's tool-set change even while none of its clients listens. The entry file calls it.
   */
  hold(): void;
  /**
   * Hands an event to this replica's listeners only: one every replica learns
   * by itself (a resource change, from the event log: resource-updates.ts).
   */
  publishLocally(event: ServerEvent): void;
  close(): Promise<void>;
}

export interface McpEventBusOptions {
  /**
   * Runs before this replica's listeners hear `tools_list_changed` from another replica (or after a
   * lost LISTEN connection): reloads the tool set this replica serves.
   */
  onRemoteToolsChanged?: () => Promise<unknown>;
}

/** How often the LISTEN connection proves it is alive, and how long its statement may take. */
const HEARTBEAT_MS = 30_000;
const HEARTBEAT_TIMEOUT_MS = 10_000;

const KINDS = new Set<ServerEvent['kind']>([
  'tools_list_changed',
  'prompts_list_changed',
  'resources_list_changed',
  'resource_updated',
]);

/** An event as it travels between replicas: the event, and the replica that published it. */
interface Signed {
  event: ServerEvent;
  origin: string;
}

function parseEvent(payload: string | undefined): Signed | undefined {
  if (!payload) return undefined;
  try {
    const value = JSON.parse(payload) as { kind?: unknown; uri?: unknown; origin?: unknown };
    if (!KINDS.has(value.kind as ServerEvent['kind'])) return undefined;
    const origin = typeof value.origin === 'string' ? value.origin : '';
    if (value.kind === 'resource_updated') {
      return typeof value.uri === 'string'
        ? { event: { kind: 'resource_updated', uri: value.uri }, origin }
        : undefined;
    }
    return { event: { kind: value.kind as Exclude<ServerEvent['kind'], 'resource_updated'> }, origin };
  } catch {
    return undefined;
  }
}

/** A lost connection may have cost events of any origin: treated as another replica's change. */
const UNKNOWN_ORIGIN = '';

/**
 * What both buses share: this replica's listeners (a throwing listener does not stop the others), its
 * origin id, and the delivery rule: events reach the listeners one after another, in the order they
 * arrived, and another replica's tool-set change only after this replica reloaded its own.
 */
abstract class ReplicaBus implements McpEventBus {
  protected readonly local: InMemoryServerEventBus;
  /** Signs what this replica publishes. */
  readonly origin = randomUUID();
  private delivery: Promise<void> = Promise.resolve();

  constructor(
    protected readonly log: Logger,
    protected readonly options: McpEventBusOptions,
  ) {
    this.local = new InMemoryServerEventBus((err) => log.warn({ err }, 'MCP event listener failed'));
  }

  abstract ready(): Promise<void>;
  abstract hold(): void;
  abstract publish(event: ServerEvent): void;
  abstract close(): Promise<void>;

  subscribe(listener: (event: ServerEvent) => void): () => void {
    return this.local.subscribe(listener);
  }

  publishLocally(event: ServerEvent): void {
    this.deliver({ event, origin: this.origin });
  }

  /** Hands an event that reached this replica to its listeners (see the class comment for the order). */
  protected deliver({ event, origin }: Signed): void {
    const reload = event.kind === 'tools_list_changed' && origin !== this.origin && this.options.onRemoteToolsChanged;
    this.delivery = this.delivery.then(async () => {
      if (reload) {
        await reload().catch((err: unknown) =>
          this.log.warn({ err }, 'reloading the tool set after another replica changed it failed'),
        );
      }
      this.local.publish(event);
    });
  }
}

/**
 * LISTEN/NOTIFY on the shared Postgres. The listening connection is open only
 * while this replica has a listener (an open stream): an app serving no
 * stream holds no extra connection.
 */
class PostgresEventBus extends ReplicaBus {
  private listeners = 0;
  private client: Client | undefined;
  /** Bumped whenever listening stops: a connection attempt of an older round gives up. */
  private round = 0;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  /** The live connection's heartbeat (HEARTBEAT_MS). */
  private heartbeat: NodeJS.Timeout | undefined;
  private listening!: Promise<void>;
  private markListening!: () => void;
  private closed = false;

  constructor(
    private readonly db: Database,
    log: Logger,
    options: McpEventBusOptions,
  ) {
    super(log, options);
    this.resetReady();
  }

  /** Listening for the replica's whole life (hold()), not only while a stream is open. */
  private always = false;

  hold(): void {
    if (this.always || this.closed) return;
    this.always = true;
    if (this.listeners === 0) void this.connect(this.round, false);
  }

  private resetReady(): void {
    this.listening = new Promise((resolve) => (this.markListening = resolve));
  }

  /** Resolves once this replica receives what others publish (while it has a listener). */
  ready(): Promise<void> {
    return this.listening;
  }

  private async connect(round: number, reconnected: boolean): Promise<void> {
    if (this.closed || round !== this.round) return;
    // An idle LISTEN connection sends nothing: a peer or middlebox that drops it without a reset would leave
    // it deaf. TCP keepalive plus a periodic statement (with a deadline) find such a connection dead.
    const client = new Client({
      ...this.db.client,
      application_name: 'tool-orchestrator-mcp-events',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      query_timeout: HEARTBEAT_TIMEOUT_MS,
    });
    client.on('notification', (msg) => {
      if (msg.channel !== MCP_EVENTS_CHANNEL) return;
      const signed = parseEvent(msg.payload);
      if (signed) this.deliver(signed);
      else this.log.warn({ payload: msg.payload?.slice(0, 200) }, 'ignoring a malformed MCP event');
    });
    client.on('error', (err) => this.lost(round, client, err));
    client.on('end', () => this.lost(round, client, undefined));
    try {
      await client.connect();
      await client.query(`LISTEN ${MCP_EVENTS_CHANNEL}`);
    } catch (err) {
      this.lost(round, client, err);
      return;
    }
    if (this.closed || round !== this.round) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempt = 0;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((err: unknown) => this.lost(round, client, err));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    this.markListening();
    if (reconnected) {
      // Whatever was published while we were not listening is lost: reload, and say the tools may have changed.
      this.log.info('MCP event listener reconnected');
      this.deliver({ event: { kind: 'tools_list_changed' }, origin: UNKNOWN_ORIGIN });
    }
  }

  private lost(round: number, client: Client, err: unknown): void {
    client.removeAllListeners('end');
    client.end().catch(() => undefined);
    if (this.client === client) clearInterval(this.heartbeat);
    if (this.closed || round !== this.round || this.retry) return;
    if (this.client !== undefined && this.client !== client) return;
    this.client = undefined;
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.log.warn({ err, retryInMs: delay }, 'MCP event listener lost its database connection');
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect(round, true);
    }, delay);
  }

  private stop(): void {
    this.round++;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    this.attempt = 0;
    const client = this.client;
    this.client = undefined;
    clearInterval(this.heartbeat);
    if (client) {
      client.removeAllListeners('end');
      client.end().catch(() => undefined);
    }
    this.resetReady();
  }

  publish(event: ServerEvent): void {
    this.db.pool
      .query('SELECT pg_notify($1, $2)', [MCP_EVENTS_CHANNEL, JSON.stringify({ ...event, origin: this.origin })])
      .catch((err: unknown) => {
        // The other replicas miss it; this one's listeners are still told.
        this.log.warn({ err }, 'MCP event not published to the other replicas (database unavailable)');
        this.deliver({ event, origin: this.origin });
      });
  }

  override subscribe(listener: (event: ServerEvent) => void): () => void {
    const off = super.subscribe(listener);
    if (++this.listeners === 1 && !this.closed && !this.always) void this.connect(this.round, false);
    let live = true;
    return () => {
      if (!live) return;
      live = false;
      off();
      if (--this.listeners === 0 && !this.always) this.stop();
    };
  }

  close(): Promise<void> {
    this.closed = true;
    this.stop();
    return Promise.resolve();
  }
}

/** The in-process buses of each embedded database (keyed by how its pools reach it): one per app instance. */
const embeddedBuses = new WeakMap<ClientConfig, Set<EmbeddedEventBus>>();

/** One process, one database: publishing hands the event to every app instance on it, signed as over NOTIFY. */
class EmbeddedEventBus extends ReplicaBus {
  private readonly peers: Set<EmbeddedEventBus>;

  constructor(db: Database, log: Logger, options: McpEventBusOptions) {
    super(log, options);
    let peers = embeddedBuses.get(db.client);
    if (!peers) embeddedBuses.set(db.client, (peers = new Set()));
    this.peers = peers;
    peers.add(this);
  }

  ready(): Promise<void> {
    return Promise.resolve();
  }

  /** In process, every instance hears every other at no cost: nothing to hold. */
  hold(): void {}

  publish(event: ServerEvent): void {
    for (const peer of this.peers) peer.deliver({ event, origin: this.origin });
  }

  close(): Promise<void> {
    this.peers.delete(this);
    return Promise.resolve();
  }
}

export function createMcpEventBus(db: Database, log: Logger, options: McpEventBusOptions = {}): McpEventBus {
  return db.sharedSession ? new EmbeddedEventBus(db, log, options) : new PostgresEventBus(db, log, options);
}
