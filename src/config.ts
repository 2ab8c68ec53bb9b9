/**
 * The service's configuration: read once at boot from the environment and
 * validated with zod. A bad value stops the boot with a message naming it.
 * Empty strings count as unset, so `FOO=` in a .env file means "default".
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { parseAllowedHosts } from './participants/address-rules';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const ZBoolean = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => ['true', '1', 'yes'].includes(v));

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** A byte count: `1048576`, `512kb`, `1mb` (binary units, as express's body parser reads them). */
const ZBytes = z
  .string()
  .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'must be a byte count such as 1048576, 512kb or 1mb')
  .transform((v) => {
    const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(v)!;
    return Math.floor(Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!);
  })
  .pipe(z.number().int().min(1, 'must be at least 1 byte'));

const toAbsolute = (p: string): string => (isAbsolute(p) ? p : resolve(process.cwd(), p));
const ZPath = z.string().transform(toAbsolute);

export const ZConfig = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  // zod 4 returns a default as the output, skipping transforms: resolve after it.
  DATA_DIR: z.string().default('.data').transform(toAbsolute),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  MIGRATE_ON_START: ZBoolean.default(true),
  BODY_LIMIT: ZBytes.default(1024 * 1024),
  RESOURCE_MAX_BYTES: ZBytes.default(262144),
  TOOLS_DIR: ZPath.optional(),
  TOOLS_HOT_RELOAD: ZBoolean.optional(),
  EXPORT_DIR: ZPath.optional(),
  ROUTER_MIN_CONFIDENCE: z.coerce.number().min(0).max(1).default(0.8),
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Below the database's 30 s statement timeout, so a stuck tool answers before its statement would. */
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(1).max(600000).default(25000),
  /** How long in-flight requests get to finish after SIGTERM; shorter than
   * Docker's default 10 s stop timeout so the database closes cleanly. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600000).default(8000),
  /** Slow-header (slowloris) clients are cut off after this; honest ones send headers in milliseconds. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1).max(600000).default(10000),
  /** Whole request (headers and body) must arrive within this: a 1 MiB body on a slow link fits. */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1).max(3600000).default(60000),
  /** Above the 60 s idle timeout of common load balancers, so the server never closes first. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1).max(600000).default(65000),
  /** A fixed admin token (a secret from the deployment). Unset: the first start writes DATA_DIR/admin.key. */
  ADMIN_API_KEY: z.string().min(16, 'must be at least 16 characters').max(512).optional(),
  /** JWTs from an identity provider: all three or none. */
  AUTH_JWKS_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  AUTH_ISSUER: z.string().optional(),
  AUTH_AUDIENCE: z.string().optional(),
  AUTH_ROLE_CLAIM: z.string().default('role'),
  /** Requests per principal per minute on this replica; failed authentications per client address likewise. */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(100_000_000).default(1200),
  /** Comma-separated origins (scheme://host[:port]) allowed besides the service's own. */
  ALLOWED_ORIGINS: z.string().optional(),
  /** Comma-separated Host names (optionally :port); unset: loopback names on a loopback HOST, else any. */
  ALLOWED_HOSTS: z.string().optional(),
  /**
   * Which peers' X-Forwarded-* headers are believed (express's `trust proxy`):
   * `true`, `false`, a hop count, or comma-separated addresses/subnets and the
   * names loopback, linklocal, uniquelocal. The default believes private
   * networks only, where a gateway in front of a container lives.
   */
  TRUST_PROXY: z.string().default('loopback, linklocal, uniquelocal'),
  /**
   * Open MCP notification streams (2026 subscriptions/listen, 2025 GET) one
   * principal may hold on this replica: the one thing the stateless endpoint
   * keeps per client (a socket and a listener each).
   */
  MCP_MAX_STREAMS_PER_PRINCIPAL: z.coerce.number().int().min(1).max(100000).default(16),
  MCP_MAX_STREAMS_PER_OWNER: z.coerce.number().int().min(1).max(100000).default(64),
  /** A pending approval request lapses after this; an hour gives a person time to look. */
  APPROVAL_TTL_SECONDS: z.coerce.number().int().min(1).max(31_536_000).default(3600),
  /** The longest `Prefer: wait=N` a held call is granted (larger N is clamped): five minutes, an HTTP client's usual patience. */
  APPROVAL_MAX_WAIT_SECONDS: z.coerce.number().int().min(0).max(3600).default(300),
  /** MCP tools/call's wait when its request has no Prefer: 0 answers at once (the host retries with _meta.approvalId). */
  MCP_APPROVAL_WAIT_SECONDS: z.coerce.number().int().min(0).max(3600).default(0),
  /** Calls one principal may have held at once on a replica (each holds a socket); beyond it a call answers at once. */
  APPROVAL_MAX_HELD_PER_PRINCIPAL: z.coerce.number().int().min(0).max(100000).default(16),
  /** Events (GET /events) are kept this long for Last-Event-ID resumes; a day covers a client offline overnight. */
  EVENTS_RETENTION_HOURS: z.coerce.number().int().min(1).max(8760).default(24),
  /** Open event streams (GET /events, GET /conversations/{id}/events) one principal may hold on this replica. */
  EVENTS_MAX_STREAMS_PER_PRINCIPAL: z.coerce.number().int().min(1).max(100000).default(16),
  /** GET /metrics (Prometheus); false: no metrics are kept and the path is a 404. */
  METRICS_ENABLED: ZBoolean.default(true),
  /**
   * The key sealing participants' secrets (AES-256-GCM): 32 random bytes in base64, the same on every
   * replica. Unset: generated at first start into DATA_DIR/secrets.key (mode 0600).
   */
  SECRETS_KEY: z.string().optional(),
  /** How often each participant's upstream tools are listed again (pinning checks); 0 turns the timer off. */
  PARTICIPANT_REFRESH_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  /** Comma-separated hosts a participant may reach although they are link-local or cloud metadata addresses. */
  PARTICIPANT_ALLOWED_HOSTS: z.string().optional(),
  /** A webhook delivery is a success when the receiver answers 2xx within this (Standard Webhooks: 15 s). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** How often expired resources are deleted (API.md: within 60 s of expiresAt; at most 30 s keeps that with a slow sweep). */
  RESOURCE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(30_000).default(10_000),
});

/** Settings whose values never appear in a message. */
const SECRETS = new Set(['ADMIN_API_KEY', 'DATABASE_URL', 'SECRETS_KEY']);

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  logLevel: (typeof LOG_LEVELS)[number];
  migrateOnStart: boolean;
  bodyLimit: number;
  resourceMaxBytes: number;
  toolsDir: string | undefined;
  toolsHotReload: boolean;
  exportDir: string;
  routerMinConfidence: number;
  dbPoolSize: number;
  toolTimeoutMs: number;
  shutdownGraceMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  adminApiKey: string | undefined;
  /** Set when JWTs are accepted. */
  jwt: { jwksUrl: string; issuer: string; audience: string; roleClaim: string } | undefined;
  rateLimitPerMinute: number;
  allowedOrigins: string[];
  /** undefined: the default for the listening address (src/http/host-origin.ts). */
  allowedHosts: string[] | undefined;
  mcpMaxStreamsPerPrincipal: number;
  /** Open MCP streams of one owner's keys together: its user keys and its conversations' agent keys (JWTs by subject). */
  mcpMaxStreamsPerOwner: number;
  approvalTtlSeconds: number;
  approvalMaxWaitSeconds: number;
  /** Never above approvalMaxWaitSeconds (clamped at load). */
  mcpApprovalWaitSeconds: number;
  approvalMaxHeldPerPrincipal: number;
  eventsRetentionHours: number;
  eventsMaxStreamsPerPrincipal: number;
  metricsEnabled: boolean;
  /** express's `trust proxy` setting. */
  trustProxy: boolean | number | string;
  /** SECRETS_KEY as given (base64); undefined: DATA_DIR/secrets.key. */
  secretsKey: string | undefined;
  participantRefreshSeconds: number;
  /** PARTICIPANT_ALLOWED_HOSTS, as listed. */
  participantAllowedHosts: string[];
  webhookTimeoutMs: number;
  resourceSweepIntervalMs: number;
}

const list = (v: string | undefined): string[] | undefined =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');

export class ConfigError extends Error {
  constructor(public readonly issues: string[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type TEnv = z.infer<typeof ZConfig>;

function allowedParticipantHosts(value: string | undefined): string[] {
  try {
    return parseAllowedHosts(value);
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv | Record<string, string | undefined>): Config {
  return toConfig(checkedEnv(env));
}

/** The variables ZConfig reads, parsed, and checked against each other; a ConfigError names each problem. */
function checkedEnv(env: NodeJS.ProcessEnv | Record<string, string | undefined>): TEnv {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(ZConfig.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') raw[key] = value.trim();
  }
  // Renamed when MCP became stateless: a deployment still setting it would otherwise be ignored silently.
  if (env.MCP_MAX_SESSIONS_PER_PRINCIPAL !== undefined && env.MCP_MAX_SESSIONS_PER_PRINCIPAL.trim() !== '') {
    throw new ConfigError([
      'MCP_MAX_SESSIONS_PER_PRINCIPAL: no longer read: MCP holds no sessions now; set MCP_MAX_STREAMS_PER_PRINCIPAL ' +
        '(open notification streams per principal and replica) instead',
    ]);
  }
  const parsed = ZConfig.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map(
        (i) =>
          `${i.path.join('.') || '(root)'}: ${i.message} (got ${
            SECRETS.has(String(i.path[0])) ? 'a value, not shown' : JSON.stringify(raw[String(i.path[0])])
          })`,
      ),
    );
  }
  const c = parsed.data;
  if (c.HTTP_HEADERS_TIMEOUT_MS > c.HTTP_REQUEST_TIMEOUT_MS) {
    // Node refuses a headers timeout above the request timeout.
    throw new ConfigError([
      `HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (got ${c.HTTP_HEADERS_TIMEOUT_MS} > ${c.HTTP_REQUEST_TIMEOUT_MS})`,
    ]);
  }
  const jwtVars = [c.AUTH_JWKS_URL, c.AUTH_ISSUER, c.AUTH_AUDIENCE];
  if (jwtVars.some((v) => v !== undefined) && !jwtVars.every((v) => v !== undefined)) {
    throw new ConfigError(['AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE: set all three to accept JWTs, or none of them']);
  }
  return c;
}

/** What the app reads, from the checked variables: names it uses, defaults that depend on others. */
function toConfig(c: TEnv): Config {
  return {
    nodeEnv: c.NODE_ENV,
    port: c.PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
    dataDir: c.DATA_DIR,
    logLevel: c.LOG_LEVEL,
    migrateOnStart: c.MIGRATE_ON_START,
    bodyLimit: c.BODY_LIMIT,
    resourceMaxBytes: c.RESOURCE_MAX_BYTES,
    toolsDir: c.TOOLS_DIR,
    toolsHotReload: c.TOOLS_HOT_RELOAD ?? c.NODE_ENV !== 'production',
    exportDir: c.EXPORT_DIR ?? resolve(c.DATA_DIR, 'exports'),
    routerMinConfidence: c.ROUTER_MIN_CONFIDENCE,
    dbPoolSize: c.DB_POOL_SIZE,
    toolTimeoutMs: c.TOOL_TIMEOUT_MS,
    shutdownGraceMs: c.SHUTDOWN_GRACE_MS,
    headersTimeoutMs: c.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: c.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: c.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    adminApiKey: c.ADMIN_API_KEY,
    jwt:
      c.AUTH_JWKS_URL !== undefined && c.AUTH_ISSUER !== undefined && c.AUTH_AUDIENCE !== undefined
        ? { jwksUrl: c.AUTH_JWKS_URL, issuer: c.AUTH_ISSUER, audience: c.AUTH_AUDIENCE, roleClaim: c.AUTH_ROLE_CLAIM }
        : undefined,
    rateLimitPerMinute: c.RATE_LIMIT_PER_MINUTE,
    allowedOrigins: list(c.ALLOWED_ORIGINS) ?? [],
    allowedHosts: list(c.ALLOWED_HOSTS),
    mcpMaxStreamsPerPrincipal: c.MCP_MAX_STREAMS_PER_PRINCIPAL,
    mcpMaxStreamsPerOwner: c.MCP_MAX_STREAMS_PER_OWNER,
    approvalTtlSeconds: c.APPROVAL_TTL_SECONDS,
    approvalMaxWaitSeconds: c.APPROVAL_MAX_WAIT_SECONDS,
    mcpApprovalWaitSeconds: Math.min(c.MCP_APPROVAL_WAIT_SECONDS, c.APPROVAL_MAX_WAIT_SECONDS),
    approvalMaxHeldPerPrincipal: c.APPROVAL_MAX_HELD_PER_PRINCIPAL,
    eventsRetentionHours: c.EVENTS_RETENTION_HOURS,
    eventsMaxStreamsPerPrincipal: c.EVENTS_MAX_STREAMS_PER_PRINCIPAL,
    metricsEnabled: c.METRICS_ENABLED,
    trustProxy:
      c.TRUST_PROXY === 'true'
        ? true
        : c.TRUST_PROXY === 'false'
          ? false
          : /^\d+$/.test(c.TRUST_PROXY)
            ? Number(c.TRUST_PROXY)
            : c.TRUST_PROXY,
    secretsKey: c.SECRETS_KEY,
    participantRefreshSeconds: c.PARTICIPANT_REFRESH_SECONDS,
    participantAllowedHosts: allowedParticipantHosts(c.PARTICIPANT_ALLOWED_HOSTS),
    webhookTimeoutMs: c.WEBHOOK_TIMEOUT_MS,
    resourceSweepIntervalMs: c.RESOURCE_SWEEP_INTERVAL_MS,
  };
}
