/**
 * The real entry point (src/server.ts through tsx) in a child process, with
 * its output collected, so tests can watch it start, fail, survive or stop.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './db-server';

export interface SpawnedServer {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  exited: Promise<number | string | null>;
  alive(): boolean;
}

export function spawnServer(env: NodeJS.ProcessEnv): SpawnedServer {
  // `--import tsx` keeps the server in this one process (tsx's CLI would fork
  // a grandchild), so a signal or SIGKILL reaches the server itself.
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'server.ts')], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  return {
    child,
    url: `http://127.0.0.1:${env.PORT}`,
    output: () => out,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

/** Polls `check` every 100 ms until it returns true; fails after `ms` with `what`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The status of GET `url`, or undefined when nothing answers. */
export async function statusOf(url: string): Promise<number | undefined> {
  const res = await fetch(url).catch(() => undefined);
  await res?.arrayBuffer();
  return res?.status;
}
