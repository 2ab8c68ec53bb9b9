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
import type { Implementation, Transport } from '@modelcontextprotocol/client';
import type { ToolLogger } from '../core/tool-interface';
import { callThrough, type CallWhere, listThrough, notifyToolsChanged } from './mcp-calls';
import { McpConnection } from './mcp-connection';
import { unavailable } from './mcp-errors';
import { type Redactor, redactorOf } from './redaction';
import { type ChildHandle, childTransport, terminate } from './mcp-stdio-process';
import type { UpstreamCallOptions, UpstreamConnector, UpstreamInfo, UpstreamTool } from './upstream';

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
  return new McpStdioConnector(options);
}

class McpStdioConnector implements UpstreamConnector {
  readonly transport = 'mcp-stdio' as const;
  private readonly participant: string;
  private readonly logger: ToolLogger;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly graceMs: number;
  private readonly listeners = new Set<() => void>();
  private readonly connection: McpConnection;
  private readonly where: CallWhere;
  private state: State = 'idle';
  private delay: number;
  private upSince = 0;
  private timer: NodeJS.Timeout | undefined;
  private current: ChildHandle | undefined;
  private downReason = 'its process is not running';

  constructor(private readonly options: McpStdioConnectorOptions) {
    this.participant = options.participant;
    this.logger = options.logger;
    this.initialMs = options.restart?.initialMs ?? DEFAULT_RESTART_INITIAL_MS;
    this.maxMs = options.restart?.maxMs ?? DEFAULT_RESTART_MAX_MS;
    this.graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    this.delay = this.initialMs;
    const redact = redactorOf(Object.values(options.env ?? {}));
    this.where = {
      participant: this.participant,
      redact,
      unavailableReason: () => (this.state === 'backoff' ? this.downReason : undefined),
    };
    this.connection = new McpConnection({
      participant: this.participant,
      logger: this.logger,
      clientInfo: options.clientInfo,
      connectTimeoutMs: options.connectTimeoutMs,
      listTimeoutMs: options.listTimeoutMs,
      probeTimeoutMs: PROBE_TIMEOUT_MS,
      makeTransport: () => this.spawn(redact),
      onToolsChanged: () => notifyToolsChanged(this.listeners, this.logger, this.participant),
      onUnexpectedClose: () => this.fail(exitReason(this.current?.child())),
      // What the SDK reports outside a request on stdio: a message that is JSON but not JSON-RPC, or stdout past the bound.
      onTransportError: (error) =>
        this.fail(
          /ReadBuffer exceeded/.test(error.message)
            ? 'flooded stdout past the message bound'
            : 'wrote non-protocol output to stdout',
        ),
    });
  }

  private spawn(redact: Redactor): Transport {
    const { options } = this;
    const handle = childTransport({
      participant: this.participant,
      logger: this.logger,
      redact,
      command: options.command,
      args: options.args,
      cwd: options.cwd,
      env: options.env,
      maxBufferSize: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      onNonProtocolOutput: () => {
        if (this.current === handle) this.fail('wrote non-protocol output to stdout');
      },
    });
    this.current = handle;
    return handle.transport;
  }

  /** The child went wrong: log it, stop it, and come back after the backoff. */
  private fail(reason: string): void {
    if (this.state === 'closed' || this.state === 'backoff') return;
    if (this.upSince > 0 && Date.now() - this.upSince >= this.maxMs) this.delay = this.initialMs;
    this.upSince = 0;
    this.state = 'backoff';
    this.downReason = `restarting: its process ${reason}`;
    const { participant, delay } = this;
    this.logger.warn(
      { participant, restartInMs: delay },
      `Participant ${participant}'s process ${reason}; restarting in ${delay} ms`,
    );
    const dying = this.current?.child();
    void Promise.all([this.connection.reset(), terminate(dying, this.graceMs)]);
    this.timer = setTimeout(() => void this.restart(), delay);
    this.timer.unref();
    this.delay = Math.min(delay * 2, this.maxMs);
  }

  private async restart(): Promise<void> {
    this.timer = undefined;
    if (this.state !== 'backoff') return;
    this.state = 'idle';
    try {
      await this.connect();
      this.logger.info({ participant: this.participant }, `Participant ${this.participant}'s process restarted`);
    } catch {
      if (this.state === 'idle') this.fail(startFailure(this.current?.child()));
    }
  }

  private async connect(): Promise<void> {
    await this.connection.ensure();
    if (this.state === 'idle') {
      this.state = 'running';
      this.upSince = Date.now();
    }
  }

  /** Calls go through only while the child is (or can at once be) up; during a backoff they fail now. */
  private async ready(): Promise<void> {
    if (this.state === 'closed') throw unavailable(this.participant, 'closed');
    if (this.state === 'backoff') throw unavailable(this.participant, this.downReason);
    if (!this.connection.isConnected) {
      try {
        await this.connect();
      } catch (error) {
        if (this.state === 'idle') this.fail(startFailure(this.current?.child()));
        throw this.connection.asThrown(error);
      }
    }
  }

  start(): Promise<void> {
    return this.ready();
  }

  async listTools(): Promise<UpstreamTool[]> {
    await this.ready();
    return listThrough(this.connection, this.where);
  }

  async call(upstreamName: string, args: Record<string, unknown>, callOptions: UpstreamCallOptions) {
    await this.ready();
    return callThrough(this.connection, { tool: upstreamName, args, options: callOptions }, this.where);
  }

  onToolsChanged(listener: () => void): void {
    this.listeners.add(listener);
  }

  info(): UpstreamInfo {
    return this.connection.info();
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.timer) clearTimeout(this.timer);
    const child = this.current?.child();
    await Promise.all([terminate(child, this.graceMs), this.connection.close()]);
    await terminate(this.current?.child(), this.graceMs);
  }
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
