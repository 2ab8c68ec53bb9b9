/**
 * The mcp-stdio connector: a supervised child process speaking MCP on its
 * stdin and stdout (API.md "Participants"). A child that exits, writes
 * something other than the protocol to stdout, or floods it past the
 * reader's bound is restarted after a backoff (1 s doubling to 60 s; back to
 * 1 s once a child has stayed up that long). Calls in flight when it goes
 * fail at once with UpstreamUnavailableError (the SDK rejects them when the
 * transport closes), and calls while it is down fail at once too. close()
 * stops the child: SIGTERM, SIGKILL after a grace, its exit awaited.
 */
import type { ChildProcess } from 'node:child_process';
import type { Implementation } from '@modelcontextprotocol/client';
import type { ToolLogger } from '../core/tool-interface';
import { callThrough, listThrough } from './mcp-calls';
import { McpConnection } from './mcp-connection';
import { unavailable } from './mcp-errors';
import { redactorOf } from './redaction';
import { type ChildHandle, childTransport, terminate } from './mcp-stdio-process';
import type { UpstreamCallOptions, UpstreamConnector, UpstreamInfo } from './upstream';

export interface McpStdioConnectorOptions {
  participant: string;
  command: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  logger: ToolLogger;
  restart?: { initialMs?: number; maxMs?: number };
  clientInfo?: Implementation;
  connectTimeoutMs?: number;
  /** tools/list, all pages. Default 30 s. */
  listTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** The largest single message read from stdout. Default 8 MiB. */
  maxMessageBytes?: number;
}

const DEFAULT_RESTART_INITIAL_MS = 1_000;
const DEFAULT_RESTART_MAX_MS = 60_000;
const DEFAULT_KILL_GRACE_MS = 2_000;
const DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
// A stdio server that answers nothing to the 2026-07-28 probe is a 2025-era one; no need to wait long to know.
const PROBE_TIMEOUT_MS = 3_000;

type State = 'idle' | 'running' | 'backoff' | 'closed';

export function createMcpStdioConnector(options: McpStdioConnectorOptions): UpstreamConnector {
  const { participant, logger } = options;
  const initialMs = options.restart?.initialMs ?? DEFAULT_RESTART_INITIAL_MS;
  const maxMs = options.restart?.maxMs ?? DEFAULT_RESTART_MAX_MS;
  const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const redact = redactorOf(Object.values(options.env ?? {}));
  const listeners = new Set<() => void>();
  let state: State = 'idle';
  let delay = initialMs;
  let upSince = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: ChildHandle | undefined;
  let downReason = 'its process is not running';

  const connection: McpConnection = new McpConnection({
    participant,
    logger,
    clientInfo: options.clientInfo,
    connectTimeoutMs: options.connectTimeoutMs,
    listTimeoutMs: options.listTimeoutMs,
    probeTimeoutMs: PROBE_TIMEOUT_MS,
    makeTransport: () => {
      const handle = childTransport({
        participant,
        logger,
        redact,
        command: options.command,
        args: options.args,
        cwd: options.cwd,
        env: options.env,
        maxBufferSize: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
        onNonProtocolOutput: () => {
          if (current === handle) fail('wrote non-protocol output to stdout');
        },
      });
      current = handle;
      return handle.transport;
    },
    onToolsChanged: () => {
      for (const l of listeners) {
        try {
          l();
        } catch {
          logger.warn({ participant }, 'tools-changed listener threw');
        }
      }
    },
    onUnexpectedClose: () => fail(exitReason(current?.child())),
    // What the SDK reports outside a request on stdio: a message that is JSON but not JSON-RPC, or stdout past the bound.
    onTransportError: (error) =>
      fail(
        /ReadBuffer exceeded/.test(error.message)
          ? 'flooded stdout past the message bound'
          : 'wrote non-protocol output to stdout',
      ),
  });

  /** The child went wrong: log it, stop it, and come back after the backoff. */
  function fail(reason: string): void {
    if (state === 'closed' || state === 'backoff') return;
    if (upSince > 0 && Date.now() - upSince >= maxMs) delay = initialMs;
    upSince = 0;
    state = 'backoff';
    downReason = `restarting: its process ${reason}`;
    logger.warn(
      { participant, restartInMs: delay },
      `Participant ${participant}'s process ${reason}; restarting in ${delay} ms`,
    );
    const dying = current?.child();
    void Promise.all([connection.reset(), terminate(dying, graceMs)]);
    timer = setTimeout(() => void restart(), delay);
    timer.unref();
    delay = Math.min(delay * 2, maxMs);
  }

  async function restart(): Promise<void> {
    timer = undefined;
    if (state !== 'backoff') return;
    state = 'idle';
    try {
      await connect();
      logger.info({ participant }, `Participant ${participant}'s process restarted`);
    } catch {
      if (state === 'idle') fail(startFailure(current?.child()));
    }
  }

  async function connect(): Promise<void> {
    await connection.ensure();
    if (state === 'idle') {
      state = 'running';
      upSince = Date.now();
    }
  }

  /** Calls go through only while the child is (or can at once be) up; during a backoff they fail now. */
  async function ready(): Promise<void> {
    if (state === 'closed') throw unavailable(participant, 'closed');
    if (state === 'backoff') throw unavailable(participant, downReason);
    if (!connection.isConnected) {
      try {
        await connect();
      } catch (error) {
        if (state === 'idle') fail(startFailure(current?.child()));
        throw connection.asThrown(error);
      }
    }
  }

  const where = { participant, redact, unavailableReason: () => (state === 'backoff' ? downReason : undefined) };

  return {
    transport: 'mcp-stdio',
    start: () => ready(),
    async listTools() {
      await ready();
      return listThrough(connection, where);
    },
    async call(upstreamName: string, args: Record<string, unknown>, callOptions: UpstreamCallOptions) {
      await ready();
      return callThrough(connection, { tool: upstreamName, args, options: callOptions }, where);
    },
    onToolsChanged(listener: () => void): void {
      listeners.add(listener);
    },
    info: (): UpstreamInfo => connection.info(),
    async close(): Promise<void> {
      if (state === 'closed') return;
      state = 'closed';
      if (timer) clearTimeout(timer);
      const child = current?.child();
      await Promise.all([terminate(child, graceMs), connection.close()]);
      await terminate(current?.child(), graceMs);
    },
  };
}

/** Why a start failed: how the child ended when it did (before or during the handshake). */
function startFailure(child: ChildProcess | undefined): string {
  const ended = child !== undefined && (child.exitCode !== null || child.signalCode !== null);
  return ended ? `${exitReason(child)} while starting` : 'could not be started';
}

function exitReason(child: ChildProcess | undefined): string {
  if (!child) return 'exited';
  if (child.signalCode) return `was killed (${child.signalCode})`;
  if (child.exitCode !== null) return `exited (code ${child.exitCode})`;
  return 'closed its pipes';
}
