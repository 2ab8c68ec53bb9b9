/**
 * A remote tool through the gateway against the same upstream called
 * directly (issue 21): `@modelcontextprotocol/server-everything` over
 * Streamable HTTP on loopback, its read-level `echo`, called
 *
 * - directly, with the official MCP SDK client (one client per connection,
 *   each initialised once: no handshake per call), and
 * - through the gateway: REST `negotiate` of `everything/echo` in one
 *   conversation, over keep-alive HTTP, the gateway holding its own reused
 *   SDK connection to the upstream.
 *
 * At one connection, the median latency of BENCH_CALLS sequential calls (the
 * gateway's added latency is the difference of the medians); at
 * BENCH_PARALLEL connections (16), calls per second for BENCH_DURATION
 * seconds, and the CPU time each process (gateway, upstream) spent per call,
 * read from /proc. The two cases alternate for BENCH_ROUNDS rounds, and each
 * round's ratio is printed, since a shared machine's speed drifts between
 * rounds but not within one.
 *
 *   BENCH_DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/participants-bench.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { withAdmin } from '../test/support/admin-client';
import { freePort } from '../test/support/free-port';
import { BENCH_ADMIN_TOKEN, median, post, start, waitReady } from './http-bench';

const ROOT = join(__dirname, '..');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const DB_NAME = 'orchestrator_participants_bench';
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 16);
const DURATION_MS = Number(process.env.BENCH_DURATION ?? 5) * 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONV = 'bench-remote';
const PARTICIPANT = 'everything';

export interface RemoteRound {
  directP50Ms: number;
  gatewayP50Ms: number;
  directPerSec: number;
  gatewayPerSec: number;
  /** CPU milliseconds per call at PARALLEL connections. */
  gatewayCpuMs: number;
  upstreamCpuMsDirect: number;
  upstreamCpuMsGateway: number;
}

/** user+system CPU of a process so far, in milliseconds (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The service's own process: scripts/start.mjs runs it as its child (after a build when stale). */
function servicePid(startPid: number): number {
  const children = readFileSync(`/proc/${startPid}/task/${startPid}/children`, 'utf8').trim().split(/\s+/);
  const last = children.at(-1);
  if (!last) throw new Error(`scripts/start.mjs (pid ${startPid}) has no child process`);
  return Number(last);
}

function startUpstream(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (/listening on port/i.test(err)) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${err.slice(-1000)}`)));
  });
}

/**
 * fetch with a signal of each request's own that follows the transport's: the
 * SDK transport hands its one long-lived signal to every request, and fetch's
 * abort listeners on it pile up until a garbage collection (undici's
 * MaxListenersExceededWarning in this process, and CPU on the direct side's
 * account; the service does the same in src/participants/request-signal.ts).
 */
const ownSignalFetch: typeof fetch = (input, init) =>
  fetch(input, init?.signal ? { ...init, signal: AbortSignal.any([init.signal]) } : init);

async function directClient(url: string): Promise<Client> {
  const client = new Client({ name: 'bench-direct', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: ownSignalFetch }));
  return client;
}

async function directCall(client: Client): Promise<void> {
  const result = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
  if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result)}`);
}

/** One REST negotiate of everything/echo over a keep-alive agent; rejects on anything but a 200 success. */
function gatewayCall(agent: Agent, url: URL, token: string): Promise<void> {
  const body = JSON.stringify({ action: `${PARTICIPANT}/echo`, args: { message: 'hi' } });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`negotiate ${res.statusCode}: ${text.slice(0, 300)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function sequentialP50(call: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

/** calls per second with one loop per caller for DURATION_MS, and the CPU each pid spent per call. */
async function parallelRate(
  calls: Array<() => Promise<void>>,
  pids: number[],
): Promise<{ perSec: number; cpuMsPerCall: number[] }> {
  const cpu0 = pids.map(cpuMs);
  const t0 = Date.now();
  let done = 0;
  await Promise.all(
    calls.map(async (call) => {
      while (Date.now() - t0 < DURATION_MS) {
        await call();
        done++;
      }
    }),
  );
  const seconds = (Date.now() - t0) / 1000;
  return { perSec: done / seconds, cpuMsPerCall: pids.map((pid, i) => (cpuMs(pid) - cpu0[i]!) / done) };
}

export async function runParticipantsBench(serverUrl: string): Promise<RemoteRound[]> {
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const upstreamPort = await freePort();
  const upstream = await startUpstream(upstreamPort);
  const port = await freePort();
  const service = await start(join(process.env.BENCH_CHECKOUT ?? ROOT, 'scripts/start.mjs'), {
    DATABASE_URL: u.toString(),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    ADMIN_API_KEY: BENCH_ADMIN_TOKEN,
    RATE_LIMIT_PER_MINUTE: '100000000',
  });
  const clients: Client[] = [];
  try {
    const svc = `http://127.0.0.1:${port}`;
    const mcpUrl = `http://127.0.0.1:${upstreamPort}/mcp`;
    await waitReady(`${svc}/readyz`);
    await post(`${svc}/participants`, { name: PARTICIPANT, transport: 'mcp-http', url: mcpUrl }, BENCH_ADMIN_TOKEN);
    const { token } = (await post(`${svc}/keys`, { role: 'user', subject: 'bench-user' }, BENCH_ADMIN_TOKEN)) as {
      token: string;
    };
    const negotiate = new URL(`${svc}/conversations/${CONV}/negotiate`);
    const one = new Agent({ keepAlive: true, maxSockets: 1 });
    const many = new Agent({ keepAlive: true, maxSockets: PARALLEL });
    for (let i = 0; i < PARALLEL; i++) clients.push(await directClient(mcpUrl));
    const [first] = clients;
    const pids = [servicePid(service.pid!), upstream.pid!];
    // Warm both paths (JIT, pools, the gateway's upstream connection) before measuring.
    for (let i = 0; i < 200; i++) {
      await directCall(first!);
      await gatewayCall(one, negotiate, token);
    }
    const rounds: RemoteRound[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const directP50Ms = await sequentialP50(() => directCall(first!));
      const gatewayP50Ms = await sequentialP50(() => gatewayCall(one, negotiate, token));
      const direct = await parallelRate(
        clients.map((c) => () => directCall(c)),
        pids,
      );
      const gateway = await parallelRate(
        clients.map(() => () => gatewayCall(many, negotiate, token)),
        pids,
      );
      rounds.push({
        directP50Ms,
        gatewayP50Ms,
        directPerSec: direct.perSec,
        gatewayPerSec: gateway.perSec,
        gatewayCpuMs: gateway.cpuMsPerCall[0]!,
        upstreamCpuMsDirect: direct.cpuMsPerCall[1]!,
        upstreamCpuMsGateway: gateway.cpuMsPerCall[1]!,
      });
    }
    one.destroy();
    many.destroy();
    return rounds;
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    service.kill('SIGTERM');
    upstream.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

export function formatParticipantsBench(rounds: RemoteRound[]): string {
  const lines = [
    `| round | direct p50 ms | gateway p50 ms | added ms | direct calls/s (${PARALLEL}) | gateway calls/s (${PARALLEL}) | ratio | gateway CPU ms/call | upstream CPU ms/call (direct, via gateway) |`,
    `|---:|---:|---:|---:|---:|---:|---:|---:|---:|`,
  ];
  for (const [i, r] of rounds.entries()) {
    lines.push(
      `| ${i + 1} | ${r.directP50Ms.toFixed(3)} | ${r.gatewayP50Ms.toFixed(3)} | ${(r.gatewayP50Ms - r.directP50Ms).toFixed(3)} | ` +
        `${r.directPerSec.toFixed(0)} | ${r.gatewayPerSec.toFixed(0)} | ${(r.gatewayPerSec / r.directPerSec).toFixed(2)} | ` +
        `${r.gatewayCpuMs.toFixed(3)} | ${r.upstreamCpuMsDirect.toFixed(3)}, ${r.upstreamCpuMsGateway.toFixed(3)} |`,
    );
  }
  const added = median(rounds.map((r) => r.gatewayP50Ms - r.directP50Ms));
  const ratio = median(rounds.map((r) => r.gatewayPerSec / r.directPerSec));
  lines.push('');
  lines.push(
    `Median over rounds: the gateway adds ${added.toFixed(3)} ms at one connection (bound: 1 ms) and keeps ` +
      `${ratio.toFixed(2)}× the direct throughput at ${PARALLEL} connections (bound: 0.5×).`,
  );
  return lines.join('\n');
}

if (require.main === module) {
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  runParticipantsBench(url)
    .then((rounds) => process.stdout.write(`${formatParticipantsBench(rounds)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
}
