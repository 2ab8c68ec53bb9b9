/**
 * The real app on a real database: buildApp with the Services the entry file
 * would make, on this test file's own database.
 */
import type { Express } from 'express';
import pino from 'pino';
import { buildApp } from '../../src/app';
import { type Config, loadConfig } from '../../src/config';
import { type Database, openDatabase } from '../../src/db/database';
import { createLogger } from '../../src/logger';
import type { Services } from '../../src/services';
import { wireServices } from '../../src/bootstrap';
import { AUDIT_DEFAULTS, type AuditStoreOptions } from '../../src/db/audit-store';
import type { AuthenticatorOptions } from '../../src/auth/authenticator';
import { TEST_AUTH_ENV } from './auth';
import type { ToolRegistry, ToolRegistryOptions } from '../../src/core/tool-registry';
import { type TestDatabase, createMigratedDatabase } from './db-server';
import type { WebhookOutboxOptions } from '../../src/core/webhook-outbox';

export interface TestApp {
  app: Express;
  services: Services;
  db: Database;
  database: TestDatabase;
  registry: ToolRegistry;
  /** With `captureLogs`: every log line, parsed, instead of stdout. */
  logs: LogLine[];
  close(): Promise<void>;
}

export type LogLine = { level: number; msg: string } & Record<string, unknown>;

export interface TestAppOptions {
  /** Record log lines in `logs` instead of writing them. */
  captureLogs?: boolean;
  registry?: Pick<ToolRegistryOptions, 'loadTimeoutMs' | 'isolateToolsDir'>;
  auth?: AuthenticatorOptions;
  /**
   * Another replica: this app gets a pool, registry and authenticator of its
   * own on that app's database (which stays that app's to close).
   */
  replicaOf?: TestApp;
  /**
   * Run the approvals sweep (lapsed requests, due grants) as the entry file
   * does; off by default, so the other suites' query counts see none of it.
   */
  sweepApprovals?: boolean;
  /** The audit's batching and sealing intervals (src/db/audit-store.ts); the defaults unless given. */
  audit?: Partial<AuditStoreOptions>;
  /**
   * Start the webhooks' outbox (as the entry file does), with these retry
   * settings; off by default, so the other suites' query counts see none of it.
   */
  webhooks?: WebhookOutboxTestOptions;
}

export type WebhookOutboxTestOptions = Pick<WebhookOutboxOptions, 'retryScheduleMs' | 'disableAfterMs' | 'sweepMs'>;

export async function createTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.replicaOf?.database ?? (await createMigratedDatabase());
  const config: Config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    ...TEST_AUTH_ENV,
    ...env,
  });
  const logs: LogLine[] = [];
  const logger = options.captureLogs
    ? pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) })
    : createLogger(config.logLevel);
  const db = openDatabase({ client: database.client, poolSize: 5, sharedSession: database.embedded });
  const { services, registry } = wireServices(
    config,
    logger,
    db,
    { debounceMs: 50, ...options.registry },
    options.auth ?? {},
    { ...AUDIT_DEFAULTS, ...options.audit },
    options.webhooks ?? {},
  );
  await registry.load();
  await services.participants.start();
  services.authenticator.start();
  if (options.sweepApprovals) services.approvals.startSweeper();
  if (options.webhooks) await services.webhookOutbox.start();
  const app = buildApp(services);
  return {
    app,
    services,
    db,
    database,
    registry,
    logs,
    close: async () => {
      services.authenticator.stop();
      services.approvals.stopSweeper();
      await services.expiry.stop();
      await services.participants.close();
      await services.webhookOutbox.close();
      await services.events.close();
      await registry.close();
      await services.audit.close();
      await db.close();
      if (!options.replicaOf) await database.close();
    },
  };
}
