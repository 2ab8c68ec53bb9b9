/**
 * Entry point: reads the configuration, opens the database (the server of
 * DATABASE_URL, or the embedded one), applies migrations, loads the tools,
 * listens, and shuts down gracefully on SIGTERM/SIGINT.
 */
import type { Server } from 'node:http';
import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';
import { openDatabase } from './db/database';
import { openDatabaseServer } from './db/embedded';
import { applyMigrations } from './db/migrator';
import { applyHttpTimeouts } from './http/server-timeouts';
import { createLogger } from './logger';
import { wireServices } from './bootstrap';
import { closeMcpSessions } from './mcp/conversation-mcp';

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
  if (config.migrateOnStart) {
    const report = await applyMigrations({ client: dbServer.clientConfig });
    logger.info(
      { applied: report.applied },
      report.applied.length ? 'Applied migrations' : 'Database schema is up to date',
    );
  }
  const db = openDatabase({
    client: dbServer.clientConfig,
    poolSize: config.dbPoolSize,
    sharedSession: dbServer.embedded,
    onError: (err) => logger.warn({ err }, 'idle database connection failed'),
  });
  const { services, registry } = wireServices(config, logger, db);
  const app = buildApp(services);
  // Listen first so /healthz answers while the tools load; /readyz waits for them.
  registry.load().catch((err: unknown) => logger.error({ err }, 'Loading the tools failed'));
  const server = app.listen(config.port, config.host, () => {
    logger.info({ port: config.port, host: config.host }, 'Listening');
  });
  applyHttpTimeouts(server, config); // same tick as listen: see applyHttpTimeouts
  installShutdown(
    server,
    // MCP sessions hold open SSE streams: end them first, or close() waits out the grace period.
    () => closeMcpSessions(services),
    async () => {
      await registry.close();
      await db.close();
      await dbServer.close();
    },
    config.shutdownGraceMs,
    logger,
  );
}

/**
 * Stop accepting, let in-flight requests finish within the grace period,
 * then close the database (and the embedded server) and exit 0.
 */
function installShutdown(
  server: Server,
  closeStreams: () => Promise<void>,
  closeResources: () => Promise<void>,
  graceMs: number,
  logger: ReturnType<typeof createLogger>,
): void {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
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
  process.stderr.write(`Startup failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
