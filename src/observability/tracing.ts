/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables
 * (endpoint, headers, timeout, protocol, service name, resource attributes,
 * sampler, batch processor): the HTTP server span of each request (named by
 * its route template), one `execute_tool {tool}/{action}` span per
 * negotiation (GenAI semantic conventions) and the database spans beneath
 * it. An incoming W3C `traceparent` is continued. Loaded only when tracing
 * is asked for (src/observability/tracing-preload.ts).
 */
import { type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { IncomingMessage } from 'node:http';
import type { NegotiateRequest, NegotiationResult } from '../core/negotiation';
import { errorOutcome, resultOutcome, routeOf, toolLabels } from './labels';
import type { Tracing } from './tracing-state';

/** Requests no trace is worth making for: orchestrators' probes and Prometheus' scrapes. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/** Outcomes that are the service's fault (span status ERROR); the others are answers (refusals, bad input). */
const FAULTS = new Set(['tool_error', 'internal', 'unavailable']);

export class TracingConfigError extends Error {}

/** OTLP over HTTP, protobuf (the specification's default) or JSON; gRPC is not shipped. */
function exporterFor(env: NodeJS.ProcessEnv): SpanExporter {
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    'http/protobuf'
  ).trim();
  if (protocol === 'http/protobuf') return new ProtobufExporter();
  if (protocol === 'http/json') return new JsonExporter();
  throw new TracingConfigError(
    `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: ${JSON.stringify(protocol.slice(0, 40))} ` +
      'is not supported; use http/protobuf (the default) or http/json',
  );
}

/** The server span is named by the route template (`POST /conversations/{conversationId}/negotiate`), never the raw path. */
function nameServerSpan(span: Span, request: unknown): void {
  const req = request as IncomingMessage & { route?: { path?: unknown }; baseUrl?: string };
  if (typeof req.headers !== 'object' || !('baseUrl' in req)) return; // an outgoing request, or never reached express
  const route = routeOf(req);
  span.setAttribute('http.route', route);
  span.updateName(`${req.method ?? 'GET'} ${route}`);
}

const STRING_LITERAL_RE = /'(?:[^']|'')*'/g;

/**
 * The audit writes its batches as literal SQL (one round trip for many
 * rows): their values (conversation ids, actors) are masked in db.query.text,
 * as the semantic conventions ask for non-parameterized statements.
 */
function maskLiterals(span: Span, info: { query: { text: string } }): void {
  const text = info.query.text;
  if (text.includes("'")) span.setAttribute('db.query.text', text.replace(STRING_LITERAL_RE, '?'));
}

function annotate(span: Span, req: NegotiateRequest, result: NegotiationResult | undefined, outcome: string): void {
  const labels = toolLabels(req, result);
  if (result?.routing) {
    const name = `${labels.tool}/${labels.action}`;
    span.setAttribute('gen_ai.tool.name', name);
    span.updateName(`execute_tool ${name}`);
  } else if (labels.tool === '_gateway') {
    span.setAttribute('gen_ai.tool.name', labels.action);
    span.updateName(`execute_tool ${labels.action}`);
  }
  span.setAttribute('tool_gateway.outcome', outcome);
  if (outcome !== 'ok') span.setAttribute('error.type', outcome);
  if (FAULTS.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR });
}

export function startTracing(env: NodeJS.ProcessEnv): Tracing {
  const resource = resourceFromAttributes({ 'service.name': 'tool-orchestrator' }).merge(
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    detectResources({ detectors: [envDetector] }),
  );
  // The batch processor reads OTEL_BSP_*; the provider reads OTEL_TRACES_SAMPLER(_ARG).
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporterFor(env))] });
  // The AsyncLocalStorage context manager and the W3C traceparent/baggage propagators.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?', 1)[0]!),
        applyCustomAttributesOnSpan: nameServerSpan,
      }),
      // Only queries made for a traced request: the sweeps and the audit's batches start no traces of their own.
      // Statement texts are recorded (they are the service's own), never their parameters nor literals.
      new PgInstrumentation({ requireParentSpan: true, requestHook: maskLiterals }),
    ],
  });
  const tracer = trace.getTracer('tool-orchestrator');
  return {
    negotiation: (conversationId, req, call) =>
      tracer.startActiveSpan(
        'execute_tool',
        {
          kind: SpanKind.INTERNAL,
          attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.conversation.id': conversationId },
        },
        async (span) => {
          try {
            const result = await call();
            annotate(span, req, result, resultOutcome(result));
            return result;
          } catch (err) {
            annotate(span, req, undefined, errorOutcome(err));
            throw err;
          } finally {
            span.end();
          }
        },
      ),
    upstream: (remote) => {
      const span = trace.getActiveSpan();
      if (!span) return;
      // Where the call went, never how (no URL path, header or credential).
      if (remote.address !== undefined) span.setAttribute('server.address', remote.address);
      if (remote.transport !== 'openapi') span.setAttribute('mcp.method.name', 'tools/call');
    },
    shutdown: () => provider.shutdown(),
  };
}
