/**
 * A private Postgres cluster for fault tests: its own data directory and
 * port, so a test can stop, restart or kill it without touching the shared
 * server on 5432 that other test files (and other people) use.
 * initdb and pg_ctl refuse to run as root, so they run as the `postgres`
 * user when this process is root.
 */
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './spawn-server';

const run = promisify(execFile);
const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';
const SUPERUSER = 'postgres';

export interface PgCluster {
  port: number;
  /** URL of the cluster's `postgres` database, as its superuser. */
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** `pg_ctl restart -m immediate`: every backend dies without a goodbye. */
  restartImmediate(): Promise<void>;
  /** Stops the cluster (if running) and deletes its directory. */
  destroy(): Promise<void>;
}

async function asPostgres(cmd: string, args: string[]): Promise<void> {
  const file = join(BIN, cmd);
  if (userInfo().uid === 0) await run('runuser', ['-u', SUPERUSER, '--', file, ...args]);
  else await run(file, args);
}

/** Creates (initdb) a cluster on a free port; it is not started. */
export async function createPgCluster(): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'orchestrator-pgcluster-'));
  // The directory must belong to the user that runs initdb and the server.
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', SUPERUSER]);
    const { stdout: gid } = await run('id', ['-g', SUPERUSER]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, 'data');
  await asPostgres('initdb', ['-D', data, '-U', SUPERUSER, '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  // No unix socket (its default directory may not be writable); no fsync: this data is thrown away.
  const options = `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off -c max_connections=60`;
  const pgCtl = (...args: string[]): Promise<void> =>
    asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', options, ...args]);
  let running = false;
  const cluster: PgCluster = {
    port,
    url: `postgresql://${SUPERUSER}@127.0.0.1:${port}/postgres`,
    start: async () => {
      await pgCtl('start', '-w', '-t', '30');
      running = true;
    },
    stop: async () => {
      await pgCtl('stop', '-w', '-m', 'fast');
      running = false;
    },
    restartImmediate: async () => {
      await pgCtl('restart', '-w', '-t', '30', '-m', 'immediate');
      running = true;
    },
    destroy: async () => {
      if (running) await pgCtl('stop', '-w', '-m', 'immediate').catch(() => undefined);
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
