/**
 * The running tracing, when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT started it
 * (src/observability/tracing-preload.ts). This module loads nothing of
 * OpenTelemetry: with tracing off, the service never loads the SDK.
 */
import type { NegotiateRequest, NegotiationResult } from '../core/negotiation';
import type { RemoteActionInfo } from '../core/remote-action';

export interface Tracing {
  /** Runs one negotiation inside its `execute_tool` span (the database spans beneath it). */
  negotiation(
    conversationId: string,
    req: NegotiateRequest,
    call: () => Promise<NegotiationResult>,
  ): Promise<NegotiationResult>;
  /** Inside a negotiation: its span records the participant's upstream call (server.address, mcp.method.name). */
  upstream(remote: RemoteActionInfo): void;
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

export function activeTracing(): Tracing | undefined {
  return active;
}

export function setActiveTracing(tracing: Tracing | undefined): void {
  active = tracing;
}

/**
 * Whether the standard variables ask for traces: an OTLP endpoint (for all
 * signals or traces), and neither OTEL_SDK_DISABLED=true nor
 * OTEL_TRACES_EXPORTER=none.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const set = (v: string | undefined): boolean => v !== undefined && v.trim() !== '';
  if (!set(env.OTEL_EXPORTER_OTLP_ENDPOINT) && !set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() !== 'none';
}
