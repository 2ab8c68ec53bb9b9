/**
 * Real MCP upstreams for the participant tests: the reference servers from
 * node_modules started with `node <entry file>` (never npx), on free ports,
 * stopped after; and a logger that keeps what it was told.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { ToolLogger } from '../../../src/core/tool-interface';
import { PROJECT_ROOT as ROOT } from '../../../src/project-root';
import { freePort } from '../../support/free-port';

export const EVERYTHING_ENTRY = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY_ENTRY = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const FIXTURES = join(ROOT, 'test/fixtures/participants');

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: unknown;
  msg?: string;
}

/** A ToolLogger keeping every line; `text()` is everything it was told, as one string to grep. */
export function memoryLogger(): ToolLogger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object | string, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    text: () => lines.map((l) => `${l.level} ${JSON.stringify(l.obj)} ${l.msg ?? ''}`).join('\n'),
  };
}

export interface RunningUpstream {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Resolves when `child` printed `marker` (stdout or stderr); rejects when it exits first or after `ms`. */
function waitForOutput(child: ChildProcess, marker: string, output: () => string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => done(new Error(`upstream did not print "${marker}" within ${ms} ms: ${output()}`)),
      ms,
    );
    const onData = (): void => {
      if (output().includes(marker)) done();
    };
    const onExit = (code: number | null): void =>
      done(new Error(`upstream exited (${code}) before "${marker}": ${output()}`));
    function done(error?: Error): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    onData();
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/**
 * server-everything over Streamable HTTP (a 2025-era server, SDK 1.x) on a
 * free port, or on `port` (to restart it where it was): PORT is how it takes one.
 */
export async function startEverythingHttp(port?: number): Promise<RunningUpstream> {
  port ??= await freePort();
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, 'streamableHttp'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const output = (): string => out;
  await waitForOutput(child, `listening on port ${port}`, output, 30_000);
  return { url: `http://127.0.0.1:${port}/mcp`, child, output, stop: () => stopChild(child) };
}

/** The process with this pid is gone (exited and reaped: a zombie still answers signal 0). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
