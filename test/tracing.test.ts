/**
 * OpenTelemetry traces (API.md, Operations), checked as an operator sees
 * them: the real entry point in a child process, configured only by OTEL_*
 * variables, exports over OTLP/HTTP (JSON encoding) to a receiver of this
 * test's own; one negotiate call with a `traceparent` gives the HTTP server
 * span continuing that trace, the `execute_tool` span beneath it with the
 * GenAI attributes, and the database spans beneath that. Without an
 * endpoint, nothing of the SDK is loaded.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { bearer } from './support/auth';
import { ROOT, type UrlTestDatabase, createMigratedDatabase, serverUrl } from './support/db-server';
import { uniqueId } from './support/ids';
import { waitFor } from './support/poll';
import { type ScratchDir, scratchDir } from './support/scratch-dir';
import { type SpawnedServer, startServer } from './support/spawn-server';
import { startEverythingHttp } from './participants/support/upstreams';

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: AnyValue }[];
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: AnyValue }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

const SPAN_KIND_SERVER = 2;

function attr(span: OtlpSpan, key: string): unknown {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue ?? v?.boolValue ?? v?.doubleValue;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A minimal OTLP/HTTP trace receiver: records each JSON export request's spans. */
class Receiver {
  readonly spans: OtlpSpan[] = [];
  readonly serviceNames = new Set<string>();
  readonly contentTypes = new Set<string>();
  private readonly server: Server = createServer((req, res) => {
    void body(req).then((text) => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return res.writeHead(404).end();
      this.contentTypes.add(req.headers['content-type'] ?? '');
      const parsed = JSON.parse(text) as ExportRequest;
      for (const rs of parsed.resourceSpans ?? []) {
        const name = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        if (name) this.serviceNames.add(name);
        for (const ss of rs.scopeSpans ?? []) this.spans.push(...(ss.spans ?? []));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

interface Traced {
  server: SpawnedServer;
  close(): Promise<void>;
}

/** The entry point in a child process exporting to `endpoint`, on a database of its own. */
async function startTraced(endpoint: string, env: Record<string, string>): Promise<Traced> {
  const childEnv: Record<string, string> = {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'tracing-test',
    ...env,
  };
  // The machine's Postgres when the suite runs against it, else the embedded database.
  let database: UrlTestDatabase | undefined;
  let dataDir: ScratchDir | undefined;
  if (serverUrl()) {
    database = (await createMigratedDatabase()) as UrlTestDatabase;
    childEnv.DATABASE_URL = database.url;
  } else {
    dataDir = scratchDir('tracing-data');
    childEnv.DATA_DIR = dataDir.path;
  }
  const server = await startServer(childEnv);
  return {
    server,
    close: async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await server.exited;
      await database?.close();
      dataDir?.remove();
    },
  };
}

describe('OpenTelemetry traces over OTLP', () => {
  const receiver = new Receiver();
  let endpoint: string;
  let traced: Traced | undefined;
  let server: SpawnedServer | undefined;

  beforeAll(async () => {
    endpoint = await receiver.listen();
    // Export within 100 ms of a span's end rather than the default 5 s.
    // A key for the participants' secrets (the test's participant has a header), rather than one in DATA_DIR.
    traced = await startTraced(endpoint, {
      OTEL_BSP_SCHEDULE_DELAY: '100',
      SECRETS_KEY: randomBytes(32).toString('base64'),
    });
    server = traced.server;
  }, 90_000);

  afterAll(async () => {
    await traced?.close();
    await receiver.close();
  });

  it('continues the incoming trace: HTTP span, execute_tool span with GenAI attributes, database spans beneath', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const conversationId = uniqueId('traced');
    const res = await fetch(`${server!.url}/conversations/${conversationId}/negotiate`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ action: 'example-tool/greet', args: { name: 'otel' } }),
    });
    expect(res.status).toBe(200);

    const ofTrace = (): OtlpSpan[] => receiver.spans.filter((s) => s.traceId === traceId);
    // The server span ends last (after the response): once it is exported, the trace is complete.
    await waitFor('the server span of the negotiate call', () => ofTrace().some((s) => s.kind === SPAN_KIND_SERVER));
    const spans = ofTrace();

    const httpSpan = spans.find((s) => s.kind === SPAN_KIND_SERVER)!;
    expect(httpSpan.name).toBe('POST /conversations/{conversationId}/negotiate');
    expect(httpSpan.parentSpanId).toBe(callerSpanId);
    expect(attr(httpSpan, 'http.route')).toBe('/conversations/{conversationId}/negotiate');

    const toolSpans = spans.filter((s) => s.name.startsWith('execute_tool'));
    expect(toolSpans).toHaveLength(1);
    const toolSpan = toolSpans[0]!;
    expect(toolSpan.name).toBe('execute_tool example-tool/greet');
    expect(toolSpan.parentSpanId).toBe(httpSpan.spanId);
    expect(attr(toolSpan, 'gen_ai.operation.name')).toBe('execute_tool');
    expect(attr(toolSpan, 'gen_ai.tool.name')).toBe('example-tool/greet');
    expect(attr(toolSpan, 'gen_ai.conversation.id')).toBe(conversationId);
    expect(attr(toolSpan, 'tool_gateway.outcome')).toBe('ok');
    expect(attr(toolSpan, 'error.type')).toBeUndefined();

    // Database spans (instrumentation-pg) whose parent chain reaches the execute_tool span.
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const under = (s: OtlpSpan, ancestor: OtlpSpan): boolean => {
      for (let p = s.parentSpanId; p !== undefined && p !== ''; p = byId.get(p)?.parentSpanId) {
        if (p === ancestor.spanId) return true;
      }
      return false;
    };
    const dbSpans = spans.filter(
      (s) => attr(s, 'db.system') === 'postgresql' || attr(s, 'db.system.name') === 'postgresql',
    );
    expect(dbSpans.length).toBeGreaterThan(0);
    expect(dbSpans.filter((s) => under(s, toolSpan)).length).toBeGreaterThan(0);
    // No statement parameters in any span: the conversation id travels as a parameter.
    for (const s of dbSpans) expect(JSON.stringify(s.attributes)).not.toContain(conversationId);

    expect(receiver.serviceNames).toContain('tracing-test');
    expect([...receiver.contentTypes]).toEqual(['application/json']);
    // Probes (waitReady polled /readyz) make no spans.
    expect(receiver.spans.some((s) => s.name.includes('/readyz') || attr(s, 'http.target') === '/readyz')).toBe(false);
  });

  it('records where a participant’s upstream call went: server.address and mcp.method.name, no secret', async () => {
    const upstream = await startEverythingHttp();
    try {
      const secret = `secret-${randomBytes(8).toString('hex')}`;
      const registered = await fetch(`${server!.url}/participants`, {
        method: 'POST',
        headers: { ...bearer(), 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'traced-everything',
          transport: 'mcp-http',
          url: upstream.url,
          headers: { 'X-Api-Key': secret },
        }),
      });
      expect(registered.status).toBe(201);
      const traceId = randomBytes(16).toString('hex');
      const res = await fetch(`${server!.url}/conversations/${uniqueId('traced-remote')}/negotiate`, {
        method: 'POST',
        headers: {
          ...bearer(),
          'content-type': 'application/json',
          traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
        },
        body: JSON.stringify({ action: 'traced-everything/echo', args: { message: 'traced' } }),
      });
      expect(res.status).toBe(200);
      const ofTrace = (): OtlpSpan[] => receiver.spans.filter((s) => s.traceId === traceId);
      await waitFor('the server span of the remote call', () => ofTrace().some((s) => s.kind === SPAN_KIND_SERVER));
      const toolSpan = ofTrace().find((s) => s.name === 'execute_tool traced-everything/echo')!;
      expect(attr(toolSpan, 'server.address')).toBe('127.0.0.1');
      expect(attr(toolSpan, 'mcp.method.name')).toBe('tools/call');
      expect(JSON.stringify(ofTrace())).not.toContain(secret);
    } finally {
      await upstream.stop();
    }
  });

  it('names a refused call by its outcome code, and exports what is buffered on SIGTERM', async () => {
    // Its own server, whose batch processor would wait an hour: only the shutdown's flush exports these spans.
    const holding = await startTraced(endpoint, { OTEL_BSP_SCHEDULE_DELAY: '3600000' });
    try {
      const traceId = randomBytes(16).toString('hex');
      const conversationId = uniqueId('traced-refusal');
      const res = await fetch(`${holding.server.url}/conversations/${conversationId}/negotiate`, {
        method: 'POST',
        headers: {
          ...bearer(),
          'content-type': 'application/json',
          traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
        },
        body: JSON.stringify({ action: 'data-tool/create-resource', args: { name: 'r', data: 1 } }),
      });
      expect(res.status).toBe(403);
      expect(receiver.spans.some((s) => s.traceId === traceId)).toBe(false);
      holding.server.child.kill('SIGTERM');
      expect(await holding.server.exited).toBe(0);
      const toolSpan = receiver.spans.find((s) => s.traceId === traceId && s.name.startsWith('execute_tool'));
      expect(toolSpan?.name).toBe('execute_tool data-tool/create-resource');
      expect(attr(toolSpan!, 'tool_gateway.outcome')).toBe('permission_required');
      expect(attr(toolSpan!, 'error.type')).toBe('permission_required');
    } finally {
      await holding.close();
    }
  }, 90_000);

  it('stops cleanly (exit 0) on SIGTERM when the collector cannot be reached', async () => {
    // A port nothing listens on: the shutdown's flush fails; only spans are lost, the stop is still clean.
    const closed = new Receiver();
    const unreachable = await closed.listen();
    await closed.close();
    const orphan = await startTraced(unreachable, { OTEL_EXPORTER_OTLP_TIMEOUT: '2000' });
    try {
      const res = await fetch(`${orphan.server.url}/conversations/${uniqueId('traced-orphan')}/negotiate`, {
        method: 'POST',
        headers: { ...bearer(), 'content-type': 'application/json' },
        body: JSON.stringify({ action: 'calculator/add', args: { a: 1, b: 2 } }),
      });
      expect(res.status).toBe(200);
      orphan.server.child.kill('SIGTERM');
      expect(await orphan.server.exited).toBe(0);
    } finally {
      await orphan.close();
    }
  }, 90_000);
});

describe('without an OTLP endpoint', () => {
  const run = promisify(execFile);
  /** Loads the entry file's first import in a fresh process; says whether any OpenTelemetry module got loaded. */
  async function loadsOpenTelemetry(env: Record<string, string>): Promise<boolean> {
    const script =
      "require('./src/observability/tracing-preload.ts');" +
      "process.stdout.write(String(Object.keys(require.cache).some((k) => k.includes('@opentelemetry'))));" +
      'process.exit(0);';
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    for (const k of Object.keys(childEnv)) if (k.startsWith('OTEL_') && !(k in env)) delete childEnv[k];
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env: childEnv });
    return stdout.trim() === 'true';
  }

  it('loads nothing of OpenTelemetry (and does with one)', async () => {
    expect(await loadsOpenTelemetry({})).toBe(false);
    expect(await loadsOpenTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toBe(true);
  });
});
