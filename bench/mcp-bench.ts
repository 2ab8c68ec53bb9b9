/**
 * The MCP endpoint against REST negotiate, side by side, under the same load:
 * the same call (data-tool's read-resource, one decision and one round trip
 * to Postgres either way) through `POST /conversations/{id}/negotiate` and
 * through `tools/call` of `data-tool_read-resource` on
 * `/conversations/{id}/mcp`, as a 2026-07-28 client sends it (stateless:
 * version and capabilities in each request's `_meta`) and as a 2025-11-25
 * client does (the stateless legacy leg: no session, no `_meta`). autocannon,
 * 32 connections, the three in turns for BENCH_ROUNDS rounds of
 * BENCH_DURATION seconds (bench/http-bench.ts), on the compiled service as
 * `npm start` runs it; the ratio of each MCP case to REST in each round is
 * printed, since that is what a shared machine's changing speed leaves alone.
 *
 *   BENCH_DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/mcp-bench.ts
 *
 * BENCH_CHECKOUT runs another checkout's service (built there), for before/after.
 */
import { join } from 'node:path';
import { withAdmin } from '../test/support/admin-client';
import { freePort } from '../test/support/free-port';
import { BENCH_ADMIN_TOKEN, type HttpBenchRow, inTurns, load, median, post, start, waitReady } from './http-bench';

const ROOT = join(__dirname, '..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DB_NAME = 'orchestrator_mcp_bench';
const CONV = 'bench-conv';
const RESOURCE = 'bench-doc';
const TOOL = 'data-tool_read-resource';
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

export const REST_CASE = 'REST negotiate read-resource';
export const MODERN_CASE = `MCP tools/call ${TOOL} (${MODERN}, stateless)`;
export const LEGACY_CASE = `MCP tools/call ${TOOL} (${LEGACY}, stateless legacy)`;

/** The tools/call a 2026-07-28 client sends: the revision, its identity and capabilities in `_meta`. */
const modernCall = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: TOOL,
    arguments: { name: RESOURCE },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
};
const modernHeaders = {
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': MODERN,
  'mcp-method': 'tools/call',
  'mcp-name': TOOL,
};
/** What a 2025-11-25 client sends after its initialize, on a server that gave it no session. */
const legacyCall = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: TOOL, arguments: { name: RESOURCE } },
};
const legacyHeaders = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': LEGACY };

/** One call, checked: the load counts only statuses, and a tool error would be a 200 too. */
async function checkCall(url: string, body: unknown, token: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  // A JSON body, or (2025 legacy) an SSE stream of one message event.
  const json = text.startsWith('{') ? text : (text.split('\n').find((l) => l.startsWith('data: ')) ?? '').slice(6);
  const message = JSON.parse(json || 'null') as {
    result?: { isError?: boolean; structuredContent?: { name?: unknown } };
  } | null;
  if (!res.ok || message?.result?.isError || message?.result?.structuredContent?.name !== RESOURCE) {
    throw new Error(`${url} did not answer the read (${res.status}): ${text.slice(0, 500)}`);
  }
}

export async function runMcpBench(serverUrl: string): Promise<HttpBenchRow[]> {
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const port = await freePort();
  const service = await start(join(process.env.BENCH_CHECKOUT ?? ROOT, 'scripts/start.mjs'), {
    DATABASE_URL: u.toString(),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    ADMIN_API_KEY: BENCH_ADMIN_TOKEN,
    // The limiter runs on every request (its cost is measured) but never refuses the bench's one principal.
    RATE_LIMIT_PER_MINUTE: '100000000',
  });
  try {
    const svc = `http://127.0.0.1:${port}`;
    await waitReady(`${svc}/readyz`);
    const negotiate = `${svc}/conversations/${CONV}/negotiate`;
    const mcp = `${svc}/conversations/${CONV}/mcp`;
    const { token } = (await post(`${svc}/keys`, { role: 'user', subject: 'bench-user' }, BENCH_ADMIN_TOKEN)) as {
      token: string;
    };
    await post(negotiate, { action: 'upgrade:data-tool:level-2' }, token);
    await post(
      negotiate,
      { action: 'create-resource', args: { name: RESOURCE, data: { n: 0, items: [1, 2, 3] } } },
      token,
    );
    const read = { action: 'read-resource', args: { name: RESOURCE } };
    await checkCall(mcp, modernCall, token, modernHeaders);
    await checkCall(mcp, legacyCall, token, legacyHeaders);
    // Warm the service (JIT, pools, caches) on every path before measuring.
    await load('warm-up', negotiate, read, token);
    await load('warm-up', mcp, modernCall, token, modernHeaders);
    await load('warm-up', mcp, legacyCall, token, legacyHeaders);
    return await inTurns(
      () => load(REST_CASE, negotiate, read, token),
      () => load(MODERN_CASE, mcp, modernCall, token, modernHeaders),
      () => load(LEGACY_CASE, mcp, legacyCall, token, legacyHeaders),
    );
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

export function formatMcpBench(rows: HttpBenchRow[]): string {
  const rest = rows.find((r) => r.case === REST_CASE)!;
  const lines = [
    `| case | req/s | mean ms | p50 ms | p99 ms | vs REST (throughput) | non-2xx | errors |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|`,
  ];
  for (const r of rows) {
    const ratio = r === rest ? '1.00 (REST)' : (r.requestsPerSec / rest.requestsPerSec).toFixed(2);
    lines.push(
      `| ${r.case} | ${r.requestsPerSec} | ${r.meanMs.toFixed(2)} | ${r.p50Ms} | ${r.p99Ms} | ${ratio} | ${r.non2xx} | ${r.errors} |`,
    );
  }
  lines.push('');
  // Little's law: with CONNECTIONS requests always in flight, each takes CONNECTIONS / throughput.
  const perCall = (row: HttpBenchRow): number => (CONNECTIONS / row.requestsPerSec) * 1e6;
  for (const r of rows) {
    if (r === rest) continue;
    const each = r.rounds.map((n, i) => n / rest.rounds[i]!);
    lines.push(
      `${r.case} vs REST, round by round: ${each.map((x) => x.toFixed(2)).join(', ')} (median ${median(each).toFixed(2)}); ` +
        `${perCall(r).toFixed(0)} µs a call at ${CONNECTIONS} connection(s) against ${perCall(rest).toFixed(0)} µs: ` +
        `${(perCall(r) - perCall(rest)).toFixed(0)} µs added`,
    );
  }
  return lines.join('\n');
}

if (require.main === module) {
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  runMcpBench(url)
    .then((rows) => process.stdout.write(`${formatMcpBench(rows)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
}
