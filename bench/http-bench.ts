/**
 * negotiate over HTTP against the physical floor, in one run, under the same
 * load: autocannon with 32 connections against (a) the real service and
 * (b) bench/floor-server.ts, each in its own process, on the same Postgres.
 * The service is called as a user with an API key (authentication, the
 * owner check and the rate limiter on every request); the floor does no auth.
 *
 *   BENCH_DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/http-bench.ts
 *
 * A fresh database `orchestrator_bench` is created on that server (dropped
 * again at the end). Client, servers and Postgres share the machine's cores,
 * as they do in the reference figures of TOOLCHAIN-NOTES.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { withAdmin } from './admin-client';

const ROOT = join(__dirname, '..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const DB_NAME = 'orchestrator_bench';
const CONV = 'bench-conv';
const RESOURCE = 'bench-doc';

export interface HttpBenchRow {
  case: string;
  requestsPerSec: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

/** Starts a server process; resolves when it prints a line matching readyLine (or at once without one). */
function start(script: string, env: Record<string, string>, readyLine?: RegExp): Promise<ChildProcess> {
  // TypeScript through tsx; JavaScript (scripts/start.mjs, what `npm start` runs) as it is.
  const args = script.endsWith('.ts') ? [require.resolve('tsx/cli'), join(ROOT, script)] : [join(ROOT, script)];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (!readyLine) return Promise.resolve(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (readyLine.test(out)) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}: ${out.slice(-2000)}`)));
  });
}

/** Polls readiness (the process builds when stale, migrates and loads tools first), for at most 3 min. */
async function waitReady(url: string): Promise<void> {
  const deadline = Date.now() + 180_000; // a stale build is rebuilt first
  while (Date.now() < deadline) {
    if ((await fetch(url).catch(() => undefined))?.ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

/** The service's admin token in the bench (ADMIN_API_KEY); the load itself runs as a user with a minted key. */
const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

async function post(url: string, body: unknown, token: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} -> ${res.status} ${await res.text()}`);
  return res.json();
}

async function load(name: string, url: string, body: unknown, token?: string): Promise<HttpBenchRow> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
    connections: CONNECTIONS,
    duration: DURATION_S,
  });
  return {
    case: name,
    requestsPerSec: Math.round(result.requests.average),
    meanMs: result.latency.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

export async function runHttpBench(serverUrl: string): Promise<HttpBenchRow[]> {
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const dbUrl = u.toString();
  const [svcPort, floorPort] = [await freePort(), await freePort()];
  // As `npm start` runs it: the compiled build (scripts/start.mjs builds first when it is stale).
  const service = await start('scripts/start.mjs', {
    DATABASE_URL: dbUrl,
    PORT: String(svcPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    ADMIN_API_KEY: BENCH_ADMIN_TOKEN,
    // The limiter runs on every request (its cost is measured) but never refuses the bench's one principal.
    RATE_LIMIT_PER_MINUTE: '100000000',
  });
  const floor = await start('bench/floor-server.ts', { DATABASE_URL: dbUrl, PORT: String(floorPort) }, /ready/);
  try {
    const svc = `http://127.0.0.1:${svcPort}`;
    await waitReady(`${svc}/readyz`);
    const negotiate = `${svc}/conversations/${CONV}/negotiate`;
    // A user with an API key, as a real caller: key lookup (cached), owner check and rate limit on every request.
    const { token } = (await post(`${svc}/keys`, { role: 'user', subject: 'bench-user' }, BENCH_ADMIN_TOKEN)) as {
      token: string;
    };
    await post(negotiate, { action: 'upgrade:data-tool:level-2' }, token);
    await post(
      negotiate,
      { action: 'create-resource', args: { name: RESOURCE, data: { n: 0, items: [1, 2, 3] } } },
      token,
    );
    const update = { name: RESOURCE, data: { n: 1, items: [1, 2, 3] } };
    const floorUrl = `http://127.0.0.1:${floorPort}`;
    // Warm both servers (JIT, pools) before measuring.
    await load('warm-up', negotiate, { action: 'read-resource', args: { name: RESOURCE } }, token);
    await load('warm-up', `${floorUrl}/read/${CONV}/${RESOURCE}`, {});
    return [
      await load('floor: SELECT by primary key', `${floorUrl}/read/${CONV}/${RESOURCE}`, {}),
      await load('negotiate read-resource', negotiate, { action: 'read-resource', args: { name: RESOURCE } }, token),
      await load('floor: UPDATE ... RETURNING', `${floorUrl}/update/${CONV}/${RESOURCE}`, { data: update.data }),
      await load('negotiate update-resource', negotiate, { action: 'update-resource', args: update }, token),
    ];
  } finally {
    service.kill('SIGTERM');
    floor.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

export function formatHttpBench(rows: HttpBenchRow[]): string {
  const floorOf = (name: string): HttpBenchRow | undefined =>
    rows.find(
      (r) =>
        r.case.startsWith('floor') && (name.includes('read') ? r.case.includes('SELECT') : r.case.includes('UPDATE')),
    );
  const lines = [
    `| case | req/s | mean ms | p50 ms | p99 ms | vs floor (throughput) | non-2xx | errors |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|`,
  ];
  for (const r of rows) {
    const floor = r.case.startsWith('floor') ? undefined : floorOf(r.case);
    const ratio = floor ? (r.requestsPerSec / floor.requestsPerSec).toFixed(2) : '1.00 (floor)';
    lines.push(
      `| ${r.case} | ${r.requestsPerSec} | ${r.meanMs.toFixed(2)} | ${r.p50Ms} | ${r.p99Ms} | ${ratio} | ${r.non2xx} | ${r.errors} |`,
    );
  }
  return lines.join('\n');
}

if (require.main === module) {
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  runHttpBench(url)
    .then((rows) => process.stdout.write(`${formatHttpBench(rows)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
}
