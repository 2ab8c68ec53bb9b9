/**
 * A second instance of the app on another instance's database: its own
 * config, pool, registry and manager, as a second process would have. To
 * Postgres the two are just two sets of connections.
 */
import type { Express } from 'express';
import { buildApp } from '../../src/app';
import { wireServices } from '../../src/bootstrap';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/database';
import { createLogger } from '../../src/logger';
import { TEST_AUTH_ENV } from './auth';
import type { TestApp } from './test-app';

export interface PeerApp {
  app: Express;
  /** Closes this instance only; the database belongs to the first. */
  close(): Promise<void>;
}

export async function createPeerApp(first: TestApp, env: Record<string, string> = {}): Promise<PeerApp> {
  const config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    ...TEST_AUTH_ENV,
    ...env,
  });
  const db = openDatabase({ client: first.database.client, poolSize: 5, sharedSession: first.database.embedded });
  const { services, registry } = wireServices(config, createLogger(config.logLevel), db, { debounceMs: 50 });
  await registry.load();
  await services.participants.start();
  services.authenticator.start();
  return {
    app: buildApp(services),
    close: async () => {
      services.authenticator.stop();
      await services.participants.close();
      await registry.close();
      await db.close();
    },
  };
}
