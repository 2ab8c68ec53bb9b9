/**
 * Entry point: reads the configuration, listens (a port in use stops it with
 * exit 1), waits for the database (the server of DATABASE_URL, or the
 * embedded one) with backoff, applies migrations, loads the tools, and shuts
 * down gracefully on SIGTERM/SIGINT, also while it is still waiting.
 */
// First, and a side-effect import (never elided): tracing, when OTEL_* asks for it,
// must patch http and pg before anything loads them.
import './observability/tracing-preload';
import type { Server } from 'node:http';
import type { ClientConfig } from 'pg';
import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';
import { DataDirInUseError } from './db/data-dir-lock';
import { SecretsKeyMismatchError } from './participants/secrets';
import { openDatabase } from './db/database';
import { openDatabaseServer } from './db/embedded';
import { applyMigrations } from './db/migrator';
import { waitForDatabase } from './db/wait-for-database';
import { problemOf } from './http/problem';
import { applyHttpTimeouts } from './http/server-timeouts';
import { createExpressServer } from './http/express-server';
import { createLogger, type Logger } from './logger';
import { wireServices } from './bootstrap';
import { bootstrapAdminKey } from './auth/bootstrap-admin';
import { defaultAllowedHostsWarning } from './http/host-origin';
import { closeMcpSessions, followToolSetChanges } from './mcp/conversation-mcp';
import { closeEventStreams } from './http/event-stream';
import { activeTracing } from './observability/tracing-state';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const dbServer = await openDatabaseServer(config, (msg) => logger.info(msg));
  if (!dbServer.embedded) logger.info('Using the Postgres server of DATABASE_URL');
  const db = openDatabase({
    client: dbServer.clientConfig,
    poolSize: config.dbPoolSize,
    sharedSession: dbServer.embedded,
    onError: (err) => logger.warn({ err }, 'A database connection was lost'),
  });
  const { services, registry } = wireServices(config, logger, db);
  const app = buildApp(services);
  let started = false;
  // Until the database answers and is migrated, only /healthz reaches the app:
  // anything else (and /readyz) is a 503, not a query against a missing schema.
  const server = createExpressServer(app, (req, res) => {
    if (started || req.url === '/healthz') {
      app(req, res);
      return;
    }
    const problem = problemOf('unavailable', 'Starting: waiting for the database');
    res.writeHead(problem.status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
  });
  applyHttpTimeouts(server, config); // before listen: see applyHttpTimeouts
  const closeResources = async (): Promise<void> => {
    services.authenticator.stop();
    services.idempotency.stopPurge();
    services.approvals.stopSweeper();
    await services.expiry.stop();
    // Participants' connections (stdio children too) end before the tools they serve.
    await services.participants.close();
    // Sends in flight are cut short: their leases lapse and another replica (or the next start) sends them.
    await services.webhookOutbox.close();
    await services.events.close();
    await registry.close();
    // Queued audit entries are written (and sealed) before the pool closes.
    await services.audit.close();
    await db.close();
    await dbServer.close();
    // Last: the spans of everything above are exported before the process exits. A collector that
    // cannot be reached loses those spans, nothing of the service's data: the stop is still clean.
    await activeTracing()
      ?.shutdown()
      .catch((err: unknown) => logger.warn({ err }, 'The last spans could not be exported'));
  };
  const stopping = new AbortController();
  installShutdown(
    server,
    // MCP sessions and event streams hold open SSE streams, and held calls wait on approvals: end them first,
    // or close() waits out the grace period. A held call answers its refusal (permission_required) at once.
    () => {
      services.held.releaseAll();
      closeEventStreams(services);
      return closeMcpSessions(services);
    },
    closeResources,
    config.shutdownGraceMs,
    logger,
    stopping,
  );
  try {
    await listen(server, config.port, config.host);
  } catch (err) {
    logger.fatal({ err }, listenFailure(err, config.port, config.host));
    await closeResources().catch(() => undefined);
    process.exit(1);
  }
  logger.info({ port: config.port, host: config.host }, 'Listening');
  const hostsWarning = defaultAllowedHostsWarning(config);
  if (hostsWarning) logger.warn(hostsWarning);
  // Tools load while the database is awaited; /readyz waits for both.
  registry.load().catch((err: unknown) => logger.error({ err }, 'Loading the tools failed'));
  try {
    await waitForDatabase({
      attempt: async () => {
        await dbServer.ready;
        await db.ping();
        if (config.migrateOnStart) await migrate(dbServer.clientConfig, logger);
        await bootstrapAdminKey(services.stores.keys, config, logger);
        // Checks the secrets key against the stored fingerprint (a replica with another key stops here, naming
        // SECRETS_KEY) and publishes the participants' tools; their upstreams are reached in the background,
        // so one that is down delays nothing.
        await services.participants.start();
      },
      logger,
      signal: stopping.signal,
    });
  } catch (err) {
    if (stopping.signal.aborted) return; // SIGTERM while waiting: the shutdown handler exits.
    throw err;
  }
  services.authenticator.start();
  services.idempotency.startPurge((err) => logger.warn({ err }, 'Purging expired idempotency keys failed'));
  services.approvals.startSweeper();
  // Expired resources already read as missing; this deletes them (and records resource.expired) within 60 s.
  services.expiry.start();
  // Events are numbered and purged while nobody listens too (and resumed streams find them).
  services.events.hold();
  // The webhooks' outbox: what was waiting (a restart after a crash too) is sent, then each new event within 1 s.
  services.webhookOutbox.start().catch((err: unknown) => logger.error({ err }, 'The webhook outbox could not start'));
  // Another replica's tool-set change reaches this one (which reloads) even while no client listens.
  followToolSetChanges(services);
  started = true;
  logger.info('Database ready');
}

async function migrate(client: ClientConfig, logger: Logger): Promise<void> {
  const report = await applyMigrations({ client });
  logger.info(
    { applied: report.applied },
    report.applied.length ? 'Applied migrations' : 'Database schema is up to date',
  );
}

/** Resolves once the server listens; rejects with the server's 'error' (port in use…). */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function listenFailure(err: unknown, port: number, host: string): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'EADDRINUSE') return `Cannot listen: port ${port} on ${host} is already in use (set PORT)`;
  if (code === 'EACCES') return `Cannot listen: no permission to use port ${port} on ${host} (set PORT)`;
  if (code === 'EADDRNOTAVAIL') return `Cannot listen: address ${host} is not available here (set HOST)`;
  return `Cannot listen on port ${port} on ${host}`;
}

/**
 * Stop accepting, let in-flight requests finish within the grace period,
 * then close the database (and the embedded server) and exit 0. Aborts
 * `stopping`, which ends a start-up still waiting for the database.
 */
function installShutdown(
  server: Server,
  closeStreams: () => Promise<void>,
  closeResources: () => Promise<void>,
  graceMs: number,
  logger: Logger,
  stopping: AbortController,
): void {
  const stop = (signal: string): void => {
    if (stopping.signal.aborted) return;
    stopping.abort();
    logger.info({ signal, graceMs }, 'Shutting down');
    const force = setTimeout(() => {
      logger.warn('Grace period over; closing remaining connections');
      server.closeAllConnections();
    }, graceMs);
    force.unref();
    void closeStreams()
      .catch((err: unknown) => logger.warn({ err }, 'Error while closing MCP sessions'))
      .finally(() => server.closeIdleConnections());
    server.close(() => {
      clearTimeout(force);
      closeResources()
        .then(() => {
          logger.info('Stopped');
          process.exit(0);
        })
        .catch((err: unknown) => {
          logger.error({ err }, 'Error while closing resources');
          process.exit(1);
        });
    });
    // Keep-alive connections with no request in flight would hold close() open.
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  // A DATA_DIR owned by another process, or another SECRETS_KEY, is an operator's situation, not a bug: no stack.
  const text =
    err instanceof DataDirInUseError || err instanceof SecretsKeyMismatchError
      ? err.message
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
  process.stderr.write(`Startup failed: ${text}\n`);
  process.exit(1);
});
