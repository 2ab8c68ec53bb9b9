/**
 * The application's database handle: one `pg` pool, shared by the Prisma
 * client (through @prisma/adapter-pg) and by the few hot-path statements that
 * are written in SQL, so a request never holds two pools' connections.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, type ClientConfig, type PoolClient } from 'pg';
import { PrismaClient } from '../generated/prisma/client';

export interface Database {
  pool: Pool;
  prisma: PrismaClient;
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
  // An idle client losing its server emits here; without a listener the process would crash.
  pool.on('error', (err) => opts.onError?.(err));
  if (opts.sharedSession) pool.on('connect', unnameStatements);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  let closed = false;
  return {
    pool,
    prisma,
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

/** Drops the `name` of query configs, so nothing is prepared under a session-wide name. */
function unnameStatements(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    if (config && typeof config === 'object' && 'name' in config) {
      const { name: _name, ...unnamed } = config as Record<string, unknown>;
      return query(unnamed, ...rest);
    }
    return query(config, ...rest);
  };
}

const NODE_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** Prisma's codes for unreachable server, timeouts and pool exhaustion. */
const PRISMA_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);

/**
 * Whether an error means "the database cannot be reached right now" (a 503),
 * judged by error codes along the cause chain, never by message text:
 * Node socket codes, SQLSTATE class 08 (connection exception), 57P01-57P03
 * (shutdown), 53300 (too many connections), and Prisma's connection codes.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const rec = e as { code?: unknown; kind?: unknown; cause?: unknown; originalCode?: unknown };
    for (const c of [rec.code, rec.originalCode]) {
      if (typeof c !== 'string') continue;
      if (NODE_UNAVAILABLE.has(c) || PRISMA_UNAVAILABLE.has(c)) return true;
      if (/^08...$/.test(c) || /^57P0[123]$/.test(c) || c === '53300') return true;
    }
    if (rec.kind === 'DatabaseNotReachable' || rec.kind === 'ConnectionClosed' || rec.kind === 'SocketTimeout')
      return true;
    e = rec.cause;
  }
  return false;
}
