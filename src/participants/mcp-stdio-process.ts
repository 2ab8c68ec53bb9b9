/**
 * The child process of an mcp-stdio participant, as the SDK's
 * StdioClientTransport spawns it: without a shell (cross-spawn with
 * `shell: false`), its environment only the participant's `env` beside the
 * SDK's defaults (getDefaultEnvironment: HOME, LOGNAME, PATH, SHELL, TERM,
 * USER), never this process's environment as a whole.
 *
 * What the SDK does not do, done here: stderr lines go to the log (redacted,
 * truncated, bounded in rate); stdout is watched for lines that are not JSON
 * at all, which the SDK's reader skips silently (a server that prints to
 * stdout is broken, and restarted); a stop is SIGTERM, then SIGKILL after a
 * grace, awaited until the process has exited (Node reaps it then: no zombie).
 *
 * The transport must stay the SDK's base class exactly (its version
 * negotiation probes a disposable sibling process only for that class), so
 * the child process is read from the transport's `_process` field, the one
 * thing of the SDK's internals this relies on (pinned SDK version; without
 * it only the watch of stdout is lost).
 */
import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { ToolLogger } from '../core/tool-interface';
import { type Redactor, truncate } from './redaction';

export interface ChildSpec {
  participant: string;
  command: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  logger: ToolLogger;
  redact: Redactor;
  /** A single stdout message larger than this closes the transport (the SDK's bound). */
  maxBufferSize: number;
  /** Told when stdout carries a line that is not JSON. */
  onNonProtocolOutput: () => void;
}

const STDERR_LINE_LIMIT = 500;
// stderr lines logged per window at most: a child spewing stderr must not flood the log.
const STDERR_LINES_PER_WINDOW = 50;
const STDERR_WINDOW_MS = 10_000;

/** Splits a stream into lines of bounded length (the rest of a longer line is dropped) and hands each to `onLine`. */
function eachLine(stream: Readable, limit: number, onLine: (line: string) => void): void {
  let current = '';
  let overlong = false;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf('\n', start);
      const piece = chunk.slice(start, nl === -1 ? undefined : nl);
      if (current.length < limit) current += piece.slice(0, limit - current.length);
      else if (piece.length > 0) overlong = true;
      if (nl === -1) return;
      onLine(overlong ? `${current}…` : current);
      current = '';
      overlong = false;
      start = nl + 1;
    }
  });
}

function logStderr(spec: ChildSpec, stream: Readable): void {
  let windowStart = Date.now();
  let count = 0;
  eachLine(stream, STDERR_LINE_LIMIT, (line) => {
    const now = Date.now();
    if (now - windowStart > STDERR_WINDOW_MS) {
      if (count > STDERR_LINES_PER_WINDOW) {
        spec.logger.warn(
          { participant: spec.participant },
          `${spec.participant} stderr: ${count - STDERR_LINES_PER_WINDOW} lines not logged`,
        );
      }
      windowStart = now;
      count = 0;
    }
    count += 1;
    if (count > STDERR_LINES_PER_WINDOW || line.trim() === '') return;
    spec.logger.warn(
      { participant: spec.participant },
      `${spec.participant} stderr: ${truncate(spec.redact(line), STDERR_LINE_LIMIT)}`,
    );
  });
}

/** Calls `onJunk` at the first stdout line that cannot be a JSON-RPC message (does not start with `{` or `[`). */
function watchStdout(stdout: Readable, onJunk: () => void): void {
  let atLineStart = true;
  let reported = false;
  stdout.on('data', (chunk: Buffer) => {
    if (reported) return;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 0x0a) {
        atLineStart = true;
        continue;
      }
      if (!atLineStart) {
        const nl = chunk.indexOf(0x0a, i);
        if (nl === -1) return;
        i = nl - 1;
        continue;
      }
      if (c === 0x20 || c === 0x09 || c === 0x0d) continue;
      atLineStart = false;
      if (c !== 0x7b && c !== 0x5b) {
        reported = true;
        onJunk();
        return;
      }
    }
  });
}

export function childOf(transport: StdioClientTransport): ChildProcess | undefined {
  return (transport as unknown as { _process?: ChildProcess })._process;
}

export interface ChildHandle {
  transport: StdioClientTransport;
  /** The running child once the transport started it. */
  child(): ChildProcess | undefined;
}

/** A transport for one life of the child, with its stderr logged and its stdout watched once started. */
export function childTransport(spec: ChildSpec): ChildHandle {
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args ?? [],
    cwd: spec.cwd,
    env: { ...(spec.env ?? {}) },
    stderr: 'pipe',
    maxBufferSize: spec.maxBufferSize,
  });
  let child: ChildProcess | undefined;
  if (transport.stderr) logStderr(spec, transport.stderr as Readable);
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    child = childOf(transport);
    if (child?.stdout) watchStdout(child.stdout, spec.onNonProtocolOutput);
  };
  return { transport, child: () => child };
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, SIGKILL after `graceMs`, and resolves once the process has exited (and so been reaped). */
export async function terminate(child: ChildProcess | undefined, graceMs: number): Promise<void> {
  if (!child || hasExited(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'grace'>((resolve) => {
    timer = setTimeout(() => resolve('grace'), graceMs);
  });
  const first = await Promise.race([exited, grace]);
  clearTimeout(timer);
  if (first === 'grace' && !hasExited(child)) child.kill('SIGKILL');
  await exited;
}
