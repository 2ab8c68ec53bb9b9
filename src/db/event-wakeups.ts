/**
 * Wake-ups of the event feed across replicas: one LISTEN connection per
 * replica on the channel the database notifies (migration 20260407000000:
 * each approval change, and each batch a replica numbered), open while the
 * feed reads. A notification only says "read the log now": nothing is in its
 * payload, so one lost while the connection was down costs nothing but the
 * wait for the next poll (and a reconnection wakes the feed at once).
 */
import { Client } from 'pg';
import type { EventWakeups } from '../core/ports';
import type { Logger } from '../logger';
import type { Database } from './database';

export const EVENTS_CHANNEL = 'gateway_events';

/** Reconnect delays, growing to the last (a database restart takes seconds). */
const RECONNECT_DELAYS_MS = [100, 500, 1000, 2000, 5000];
/** An idle LISTEN connection proves it is alive this often (a dropped one would stay deaf). */
const HEARTBEAT_MS = 30_000;

class PostgresWakeups implements EventWakeups {
  private client: Client | undefined;
  private wake: (() => void) | undefined;
  private round = 0;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
  ) {}

  start(wake: () => void): void {
    this.wake = wake;
    void this.connect(++this.round);
  }

  private async connect(round: number): Promise<void> {
    if (round !== this.round) return;
    const client = new Client({
      ...this.db.client,
      application_name: 'tool-orchestrator-events',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      query_timeout: 10_000,
    });
    client.on('notification', () => this.wake?.());
    client.on('error', (err) => this.lost(round, client, err));
    client.on('end', () => this.lost(round, client, undefined));
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      this.lost(round, client, err);
      return;
    }
    if (round !== this.round) return void this.end(client);
    this.client = client;
    this.attempt = 0;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((err: unknown) => this.lost(round, client, err));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    // Whatever was notified while not listening: read the log now.
    this.wake?.();
  }

  private end(client: Client): Promise<void> {
    client.removeAllListeners('end');
    return client.end().catch(() => undefined);
  }

  private lost(round: number, client: Client, err: unknown): void {
    void this.end(client);
    if (this.client === client) {
      this.client = undefined;
      clearInterval(this.heartbeat);
    }
    if (round !== this.round || this.retry) return;
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.log.warn({ err, retryInMs: delay }, 'events: the LISTEN connection was lost');
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect(round);
    }, delay);
    this.retry.unref();
  }

  async stop(): Promise<void> {
    this.round++;
    this.wake = undefined;
    clearTimeout(this.retry);
    this.retry = undefined;
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    if (client) await this.end(client);
  }
}

/**
 * The feed's wake-ups on `db`; none on the embedded database, which serves
 * one process (its app instances poll the same log).
 */
export function eventWakeups(db: Database, log: Logger): EventWakeups | undefined {
  return db.sharedSession ? undefined : new PostgresWakeups(db, log);
}
