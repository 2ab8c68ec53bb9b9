/**
 * A participant's tool as the registry holds one (LoadedTool whose actions
 * carry `remote`), run in-process: its run does what a connector's does
 * (answers `{ content, structuredContent? }` as an MCP upstream would, throws
 * ParticipantUnavailableError when the upstream is "down", a ToolError for
 * an upstream error result), and counts the upstream calls it makes. For
 * the negotiate side's tests beside the real connectors' (faults on demand,
 * calls counted); `installTools` publishes them through the registry's
 * seam for participants (setRemoteTools), so the catalog, the router and
 * the MCP endpoint all see them.
 */
import { qualifiedName, providerName } from '../../src/core/naming';
import type { Level } from '../../src/core/tool-interface';
import {
  ParticipantCallError,
  ParticipantUnavailableError,
  type RemoteActionInfo,
  type RunCall,
} from '../../src/core/remote-action';
import { isRecord, type LoadedAction, type LoadedTool } from '../../src/core/tool-module';
import type { ToolRegistry } from '../../src/core/tool-registry';

export interface UpstreamCall {
  action: string;
  args: Record<string, unknown>;
  owner: string | undefined;
}

/** The fake upstream's state: what it was asked, and how it answers next. */
export class FakeUpstream {
  readonly calls: UpstreamCall[] = [];
  /** `down`: unreachable (ParticipantUnavailableError, retry after `retryAfter`); `error`: an error result. */
  mode: 'up' | 'down' | 'error' = 'up';
  retryAfter = 7;
  /** While set, each call waits on it (a slow upstream a test releases). */
  gate: Promise<void> | undefined;
  /** Resolves the next time a call reaches the upstream. */
  private arrivals: Array<() => void> = [];

  arrived(): Promise<void> {
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  async answer(action: string, args: Record<string, unknown>, call: RunCall | undefined): Promise<unknown> {
    if (this.mode === 'down') {
      // As a connector wraps its transport's failure: the cause chain carries it.
      const cause = new ParticipantUnavailableError('echoes', this.retryAfter);
      throw new Error('connect ECONNREFUSED 127.0.0.1:9', { cause });
    }
    this.calls.push({ action, args, owner: call?.conversationOwner });
    for (const arrived of this.arrivals.splice(0)) arrived();
    if (this.gate) await this.gate;
    if (this.mode === 'error') throw new ParticipantCallError(`Participant echoes: ${action} returned an error`);
    const text = typeof args.message === 'string' ? args.message : JSON.stringify(args);
    return action === 'echo'
      ? { content: [{ type: 'text', text: `Echo: ${text}` }] }
      : { content: [{ type: 'text', text: JSON.stringify({ noted: text }) }], structuredContent: { noted: text } };
  }
}

function parseMessage(args: unknown): ReturnType<LoadedAction['parseArgs']> {
  if (!isRecord(args)) return { ok: false, path: 'args', message: 'must be an object' };
  if (typeof args.message !== 'string') return { ok: false, path: 'message', message: 'must be a string' };
  return { ok: true, value: args };
}

function remoteAction(
  tool: string,
  spec: { name: string; level: Level; status?: RemoteActionInfo['status'] },
  upstream: FakeUpstream,
): LoadedAction {
  return Object.freeze({
    tool,
    name: spec.name,
    qualifiedName: qualifiedName(tool, spec.name),
    providerName: providerName(tool, spec.name),
    description: `${spec.name} (upstream ${spec.name.replace(/-/g, '_')} of participant ${tool})`,
    level: spec.level,
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    parseArgs: parseMessage,
    run: (args: Record<string, unknown>, _ctx: unknown, _stop?: AbortSignal, call?: RunCall) =>
      upstream.answer(spec.name, args, call),
    remote: {
      participant: tool,
      transport: 'mcp-http' as const,
      upstreamName: spec.name.replace(/-/g, '_'),
      status: spec.status ?? 'active',
      address: '127.0.0.1',
    },
  });
}

/**
 * Participant `name`: `echo` (read), `store-note` (write, answers
 * structuredContent) and `changed-tool` (read, quarantined: its definition
 * changed upstream).
 */
export function remoteTool(name: string, upstream: FakeUpstream): LoadedTool {
  const actions = [
    remoteAction(name, { name: 'changed-tool', level: 1, status: 'quarantined' }, upstream),
    remoteAction(name, { name: 'echo', level: 1 }, upstream),
    remoteAction(name, { name: 'store-note', level: 2 }, upstream),
  ];
  return Object.freeze({
    name,
    version: '1.0.0',
    description: `Participant ${name} (an MCP server over Streamable HTTP).`,
    actions: Object.freeze(actions),
    source: `participant:${name}`,
  });
}

/** A participant whose every action is quarantined. */
export function quarantinedTool(name: string, upstream: FakeUpstream): LoadedTool {
  return Object.freeze({
    name,
    version: '1.0.0',
    description: `Participant ${name}, every definition changed.`,
    actions: Object.freeze([remoteAction(name, { name: 'echo', level: 1, status: 'quarantined' }, upstream)]),
    source: `participant:${name}`,
  });
}

/** Publishes `tools` as the registry's participants' tools (as the participant service does). */
export async function installTools(registry: ToolRegistry, tools: LoadedTool[]): Promise<void> {
  await registry.setRemoteTools(tools);
}
