/**
 * The real entry point in a child process, as a newcomer runs it, for tests
 * of start-up, shutdown and the embedded database.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './free-port';
import { TEST_AUTH_ENV } from './auth';
import { ROOT } from './db-server';

export { freePort };

export interface SpawnedServer {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * Spawns `src/server.ts` (through tsx's loader) on the embedded database unless `env`
 * sets DATABASE_URL. Does not wait for readiness: see waitReady. `wrapper` runs
 * the server through another command (`unshare …`), which gets node's command line.
 */
export async function spawnServer(
  env: Record<string, string>,
  port?: number,
  wrapper: string[] = [],
): Promise<SpawnedServer> {
  const listenPort = port ?? (await freePort());
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(listenPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...TEST_AUTH_ENV,
    ...env,
  };
  if (!('DATABASE_URL' in env)) delete childEnv.DATABASE_URL;
  delete childEnv.TEST_DATABASE_URL;
  // `--import tsx` keeps the server in this one process (tsx's CLI would fork a
  // grandchild that outlives a SIGKILL of its parent and holds the pipes open).
  const command = [...wrapper, process.execPath, '--import', 'tsx', join(ROOT, 'src', 'server.ts')];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${listenPort}`, output: () => out, exited };
}

/** Polls /readyz until 200 (the process first opens the database and migrates), with a deadline. */
export async function waitReady(server: SpawnedServer, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${server.url}/readyz`).catch(() => undefined);
    if (res?.ok) return;
    if (server.child.exitCode !== null || server.child.signalCode !== null || Date.now() > deadline) {
      throw new Error(`server did not become ready:\n${server.output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startServer(env: Record<string, string>, wrapper: string[] = []): Promise<SpawnedServer> {
  const server = await spawnServer(env, undefined, wrapper);
  await waitReady(server);
  return server;
}
