/**
 * The MCP change-event bus shared by every replica on one database: what one
 * replica publishes (a tool set changed) reaches the open notification
 * streams of every replica, `subscriptions/listen` (2026-07-28) and the GET
 * stream of 2025-era clients alike.
 *
 * On Postgres it is LISTEN/NOTIFY on the database the replicas already share:
 * `publish` is a `pg_notify` on the channel, and one dedicated connection per
 * process LISTENs and hands each event to the local listeners (its own
 * replica's included: Postgres delivers a NOTIFY to the sessions listening,
 * the sender's too, so there is one path for local and remote events). A
 * NOTIFY is not stored: a replica whose listening connection is down misses
 * what happens meanwhile, so after reconnecting it tells its listeners that
 * the tools may have changed (a spurious `list_changed` costs a re-list; a
 * missed one leaves a client with a stale list).
 *
 * The embedded PGlite database serves one process only, and all its
 * connections share one session: there the bus is in-process, shared by
 * every app instance on that database (tests run two "replicas" in one
 * process that way).
 */
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
  close(): Promise<void>;
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

function parseEvent(payload: string | undefined): ServerEvent | undefined {
  if (!payload) return undefined;
  try {
    const value = JSON.parse(payload) as { kind?: unknown; uri?: unknown };
    if (!KINDS.has(value.kind as ServerEvent['kind'])) return undefined;
    if (value.kind === 'resource_updated') {
      return typeof value.uri === 'string' ? { kind: 'resource_updated', uri: value.uri } : undefined;
    }
    return { kind: value.kind as Exclude<ServerEvent['kind'], 'resource_updated'> };
  } catch {
    return undefined;
  }
}

/** Listeners of this process; a throwing listener does not stop the others. */
function localFanOut(log: Logger): InMemoryServerEventBus {
  return new InMemoryServerEventBus((err) => log.warn({ err }, 'MCP event listener failed'));
}

/**
 * LISTEN/NOTIFY on the shared Postgres. The listening connection is open only
 * while this replica has a listener (an open stream): an app serving no
 * stream holds no extra connection.
 */
class PostgresEventBus implements McpEventBus {
  private readonly local: InMemoryServerEventBus;
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
    private readonly log: Logger,
  ) {
    this.local = localFanOut(log);
    this.resetReady();
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
      const event = parseEvent(msg.payload);
      if (event) this.local.publish(event);
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
      // Whatever was published while we were not listening is lost: say the tools may have changed.
      this.log.info('MCP event listener reconnected');
      this.local.publish({ kind: 'tools_list_changed' });
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
      .query('SELECT pg_notify($1, $2)', [MCP_EVENTS_CHANNEL, JSON.stringify(event)])
      .catch((err: unknown) => {
        // The other replicas miss it; this one's listeners are still told.
        this.log.warn({ err }, 'MCP event not published to the other replicas (database unavailable)');
        this.local.publish(event);
      });
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    const off = this.local.subscribe(listener);
    if (++this.listeners === 1 && !this.closed) void this.connect(this.round, false);
    let live = true;
    return () => {
      if (!live) return;
      live = false;
      off();
      if (--this.listeners === 0) this.stop();
    };
  }

  close(): Promise<void> {
    this.closed = true;
    this.stop();
    return Promise.resolve();
  }
}

/** In-process buses of embedded databases, one per database (keyed by how its pools reach it). */
const embeddedBuses = new WeakMap<ClientConfig, InMemoryServerEventBus>();

function embeddedBus(db: Database, log: Logger): McpEventBus {
  let bus = embeddedBuses.get(db.client);
  if (!bus) embeddedBuses.set(db.client, (bus = localFanOut(log)));
  const shared = bus;
  const mine = new Set<() => void>();
  return {
    ready: () => Promise.resolve(),
    publish: (event) => shared.publish(event),
    subscribe: (listener) => {
      const off = shared.subscribe(listener);
      mine.add(off);
      return () => {
        mine.delete(off);
        off();
      };
    },
    close: () => {
      for (const off of mine) off();
      mine.clear();
      return Promise.resolve();
    },
  };
}

export function createMcpEventBus(db: Database, log: Logger): McpEventBus {
  return db.sharedSession ? embeddedBus(db, log) : new PostgresEventBus(db, log);
}
