/**
 * The application's database handle: one `pg` pool, shared by the Prisma
 * client (through @prisma/adapter-pg) and by the few hot-path statements that
 * are written in SQL, so a request never holds two pools' connections.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, Query, type ClientConfig, type PoolClient } from 'pg';
import { PrismaClient } from '../generated/prisma/client';

export interface Database {
  pool: Pool;
  prisma: PrismaClient;
  /** How the pool reaches the server: a component that needs a connection of its own (LISTEN) opens it with this. */
  client: ClientConfig;
  /** True for the embedded PGlite database (one session shared by all connections; no LISTEN/NOTIFY across processes). */
  sharedSession: boolean;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** Where the server is (DatabaseServer.clientConfig). */
  client: ClientConfig;
  poolSize: number;
  /** How long to wait for a connection before failing with 503 rather than hanging. */
  connectionTimeoutMs?: number;
  /**
   * True for the embedded PGlite database: all its connections share one
   * Postgres session, so a statement name prepared on one connection would
   * collide with another's. Named statements are then sent unnamed.
   */
  sharedSession?: boolean;
  onError?: (err: Error) => void;
}

export function openDatabase(opts: DatabaseOptions): Database {
  const pool = new Pool({
    ...opts.client,
    max: opts.poolSize,
    connectionTimeoutMillis: opts.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30000,
    // A runaway statement must not hold a connection forever.
    statement_timeout: 30000,
    application_name: 'tool-orchestrator',
  });
  // Every client gets a permanent 'error' listener: pg-pool only listens on
  // idle clients, so a server dropping a checked-out connection (terminated
  // backend, restart, failover) would otherwise be an unhandled 'error' event
  // and kill the process. The query in flight still fails and answers 503.
  pool.on('connect', (client) => client.on('error', (err) => connectionLost(client, err, opts.onError)));
  // The pool re-emits an idle client's error here; the client's listener has logged it.
  pool.on('error', () => undefined);
  if (opts.sharedSession) pool.on('connect', unnameStatements);
  classifyConnectFailures(pool);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  let closed = false;
  return {
    pool,
    prisma,
    client: opts.client,
    sharedSession: opts.sharedSession ?? false,
    ping: async () => {
      await pool.query('SELECT 1');
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/**
 * A connection the pool cannot get in time fails with pg-pool's uncoded
 * "timeout exceeded when trying to connect" (every connection busy, or the
 * server not answering); so does a connection ended during its start-up. Such
 * uncoded failures of `connect` (which `pool.query` and Prisma's adapter use
 * too) are marked as unavailability, so they answer 503, not 500. Failures
 * with a code (a wrong password, 28P01) keep being judged by their code.
 */
function classifyConnectFailures(pool: Pool): void {
  type Callback = (err: Error | undefined, client?: PoolClient, done?: (release?: unknown) => void) => void;
  const connect = pool.connect.bind(pool) as (cb?: Callback) => Promise<PoolClient> | undefined;
  const mark = (err: Error): Error => {
    if (err && typeof err === 'object' && (err as { code?: unknown }).code === undefined) unavailable.add(err);
    return err;
  };
  (pool as { connect: unknown }).connect = (cb?: Callback) =>
    typeof cb === 'function'
      ? connect((err, client, done) => cb(err ? mark(err) : err, client, done))
      : connect()!.catch((err: Error) => {
          throw mark(err);
        });
}

/** Drops the `name` of query configs, so nothing is prepared under a session-wide name. */
function unnameStatements(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    if (config instanceof Query) {
      (config as { name?: string }).name = undefined;
      return query(config, ...rest);
    }
    if (config && typeof config === 'object' && 'name' in config) {
      const { name: _name, ...unnamed } = config as Record<string, unknown>;
      return query(unnamed, ...rest);
    }
    return query(config, ...rest);
  };
}

/**
 * Errors a client emitted as 'error': the connection is gone. pg rejects the
 * queries in flight with the same object (some, like "Connection terminated
 * unexpectedly", carry no code to recognise them by), so remembering them
 * lets isDatabaseUnavailable classify them without reading message text.
 */
const lostConnection = new WeakSet<object>();
/** Uncoded connect failures (see classifyConnectFailures). */
const unavailable = new WeakSet<object>();

/** A query on a client whose connection was lost: SQLSTATE 08006, connection_failure. */
export class ConnectionLostError extends Error {
  readonly code = '08006';
  constructor(cause: Error) {
    super('The database connection was lost', { cause });
    this.name = 'ConnectionLostError';
  }
}

function connectionLost(client: PoolClient, err: Error, report: ((err: Error) => void) | undefined): void {
  if (!lostConnection.has(err)) report?.(err);
  lostConnection.add(err);
  // pg fails later queries on this client (the rest of a transaction, its
  // ROLLBACK) with an uncoded "not queryable" error; fail them with a coded
  // one instead, so they too answer 503. The pool drops the client on release.
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const refused = new ConnectionLostError(err);
    const callback = args.findLast((a) => typeof a === 'function') as ((e: Error) => void) | undefined;
    if (!callback) return Promise.reject(refused);
    process.nextTick(callback, refused);
    return undefined;
  };
}

const NODE_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** Prisma's codes for unreachable server, timeouts and pool exhaustion. */
const PRISMA_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);

/**
 * Whether an error means "the database cannot be reached right now" (a 503),
 * judged by error codes along the cause chain, never by message text:
 * Node socket codes, SQLSTATE class 08 (connection exception), 57P01-57P03
 * (shutdown), 53300 (too many connections), Prisma's connection codes, and
 * any error a pool client emitted when it lost its connection.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  return driverErrorChain(err).some(isUnavailableItself);
}

type DriverErrorFields = { code?: unknown; kind?: unknown; originalCode?: unknown };

function isUnavailableItself(err: object): boolean {
  if (lostConnection.has(err) || unavailable.has(err)) return true;
  const rec = err as DriverErrorFields;
  for (const c of [rec.code, rec.originalCode]) {
    if (typeof c !== 'string') continue;
    if (NODE_UNAVAILABLE.has(c) || PRISMA_UNAVAILABLE.has(c)) return true;
    if (/^08...$/.test(c) || /^57P0[123]$/.test(c) || c === '53300') return true;
  }
  return rec.kind === 'DatabaseNotReachable' || rec.kind === 'ConnectionClosed' || rec.kind === 'SocketTimeout';
}

/**
 * A driver error and what it wraps, outermost first, at most 8: its `cause`,
 * and (Prisma reports a driver error it has no code for, P2039, e.g. 57P01,
 * with the adapter's error and its SQLSTATE) `meta.driverAdapterError`. The
 * one walk of a driver error's causes in src/db (src/db/sql.ts reads its codes).
 */
export function driverErrorChain(err: unknown): object[] {
  const chain: object[] = [];
  const queue: unknown[] = [err];
  while (queue.length > 0 && chain.length < 8) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || chain.includes(e)) continue;
    chain.push(e);
    const rec = e as { cause?: unknown; meta?: { driverAdapterError?: unknown } };
    queue.push(rec.cause, rec.meta?.driverAdapterError);
  }
  return chain;
}
