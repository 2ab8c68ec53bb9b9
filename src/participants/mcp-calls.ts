/**
 * One tools/call through an McpConnection, its outcome in the contract's
 * terms: a result (an error result with a safe message), or a thrown
 * UpstreamTimeoutError / UpstreamUnavailableError. Shared by both MCP
 * transports.
 */
import type { Tool } from '@modelcontextprotocol/client';
import type { ToolLogger } from '../core/tool-interface';
import type { McpConnection } from './mcp-connection';
import { classify, rpcErrorMessage, unavailable } from './mcp-errors';
import type { Redactor } from './redaction';
import { callResultOf, upstreamToolOf } from './mcp-tools';
import { type UpstreamCallOptions, type UpstreamCallResult, type UpstreamTool, UpstreamTimeoutError } from './upstream';

export interface CallWhere {
  participant: string;
  redact: Redactor;
  /** What an unreachable upstream is said to be instead of the network reason (stdio: the child exited). */
  unavailableReason?: () => string | undefined;
}

function timedOut(participant: string, tool: string): UpstreamTimeoutError {
  return new UpstreamTimeoutError(
    `Participant ${participant}'s tool ${tool} did not answer in time; the call was cancelled`,
  );
}

export async function callThrough(
  connection: McpConnection,
  call: { tool: string; args: Record<string, unknown>; options: UpstreamCallOptions; direct?: boolean },
  where: CallWhere,
): Promise<UpstreamCallResult> {
  const { tool, args, options } = call;
  if (options.signal.aborted) throw timedOut(where.participant, tool);
  const at = { participant: where.participant, tool, redact: where.redact };
  try {
    const result = await connection.callTool(tool, args, {
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      direct: call.direct === true,
    });
    return callResultOf(result, at);
  } catch (error) {
    const failure = classify(error, false);
    switch (failure.kind) {
      case 'timeout':
        throw timedOut(where.participant, tool);
      case 'rpc':
        return {
          output: { content: [] },
          isError: true,
          errorMessage: rpcErrorMessage(at, failure.code, failure.message),
        };
      case 'http':
        return {
          output: { content: [] },
          isError: true,
          errorMessage: `Participant ${where.participant}'s tool ${tool} was refused upstream (HTTP ${failure.status})`,
        };
      case 'unavailable':
        throw failure.error ?? unavailable(where.participant, where.unavailableReason?.() ?? failure.reason);
      default:
        throw unavailable(where.participant, 'lost its session');
    }
  }
}

export async function listThrough(connection: McpConnection, where: CallWhere): Promise<UpstreamTool[]> {
  let tools: Tool[];
  try {
    tools = await connection.listTools();
  } catch (error) {
    // A listing that does not end is an upstream that is not working: unavailable, not a call's timeout.
    if (classify(error, false).kind === 'timeout')
      throw unavailable(where.participant, 'did not list its tools in time');
    throw connection.asThrown(error, where.unavailableReason?.());
  }
  return tools.map(upstreamToolOf);
}

/** Tells every listener the upstream's tools changed; one that throws is logged (its name only) and the rest still hear. */
export function notifyToolsChanged(listeners: Iterable<() => void>, logger: ToolLogger, participant: string): void {
  for (const l of listeners) {
    try {
      l();
    } catch (error) {
      logger.warn({ participant, err: String((error as Error)?.name) }, 'tools-changed listener threw');
    }
  }
}
