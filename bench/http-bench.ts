/**
 * negotiate over HTTP against the physical floor, in one run, under the same
 * load: autocannon with 32 connections against (a) the real service and
 * (b) bench/floor-server.ts, each in its own process, on the same Postgres.
 * Floor and service take turns, BENCH_ROUNDS rounds of BENCH_DURATION
 * seconds each (default 5 × 4 s), so a change in the machine's speed during
 * the run (a shared machine's neighbours) weighs on both alike; each row is
 * the mean over its rounds, and the ratio of each round is printed too.
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
import { freePort } from '../test/support/free-port';
import { dirname, join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { withAdmin } from '../test/support/admin-client';

const ROOT = join(__dirname, '..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DB_NAME = 'orchestrator_bench';
const CONV = 'bench-conv';
const RESOURCE = 'bench-doc';

export interface HttpBenchRow {
  case: string;
  /** The mean over the rounds. */
  requestsPerSec: number;
  meanMs: number;
  /** The median of the rounds' p50. */
  p50Ms: number;
  /** The highest of the rounds' p99. */
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Each round's req/s. */
  rounds: number[];
}

/** Starts a server process; resolves when it prints a line matching readyLine (or at once without one). */
export function start(script: string, env: Record<string, string>, readyLine?: RegExp): Promise<ChildProcess> {
  // TypeScript through tsx; JavaScript (scripts/start.mjs, what `npm start` runs) as it is.
  const path = resolve(ROOT, script);
  const args = script.endsWith('.ts') ? [require.resolve('tsx/cli'), path] : [path];
  const child = spawn(process.execPath, args, {
    // A script's own checkout (BENCH_CHECKOUT's service runs in it).
    cwd: resolve(dirname(path), '..'),
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
export async function waitReady(url: string): Promise<void> {
  const deadline = Date.now() + 180_000; // a stale build is rebuilt first
  while (Date.now() < deadline) {
    if ((await fetch(url).catch(() => undefined))?.ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

/** The service's admin token in the bench (ADMIN_API_KEY); the load itself runs as a user with a minted key. */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export async function post(url: string, body: unknown, token: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} -> ${res.status} ${await res.text()}`);
  return res.json();
}

/** One round of load: POST `body` to `url` (`headers` added to the JSON content type and the bearer token). */
export async function load(
  name: string,
  url: string,
  body: unknown,
  token?: string,
  headers: Record<string, string> = {},
): Promise<HttpBenchRow> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
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
    rounds: [Math.round(result.requests.average)],
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** One row from its rounds. */
function combine(rows: HttpBenchRow[]): HttpBenchRow {
  const mean = (f: (r: HttpBenchRow) => number): number => rows.reduce((sum, r) => sum + f(r), 0) / rows.length;
  return {
    case: rows[0]!.case,
    requestsPerSec: Math.round(mean((r) => r.requestsPerSec)),
    meanMs: mean((r) => r.meanMs),
    p50Ms: median(rows.map((r) => r.p50Ms)),
    p99Ms: Math.max(...rows.map((r) => r.p99Ms)),
    non2xx: rows.reduce((sum, r) => sum + r.non2xx, 0),
    errors: rows.reduce((sum, r) => sum + r.errors, 0),
    rounds: rows.map((r) => r.requestsPerSec),
  };
}

/** The loads in turns, ROUNDS rounds: one row each, in the order given. */
export async function inTurns(...loads: Array<() => Promise<HttpBenchRow>>): Promise<HttpBenchRow[]> {
  const rounds: HttpBenchRow[][] = loads.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, run] of loads.entries()) rounds[i]!.push(await run());
  }
  return rounds.map(combine);
}

export async function runHttpBench(serverUrl: string): Promise<HttpBenchRow[]> {
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const dbUrl = u.toString();
  const [svcPort, floorPort, prebornPort] = [await freePort(), await freePort(), await freePort()];
  // As `npm start` runs it: the compiled build (scripts/start.mjs builds first when it is stale).
  // BENCH_CHECKOUT: another checkout's service (built there) under the same load, for before/after.
  const service = await start(join(process.env.BENCH_CHECKOUT ?? ROOT, 'scripts/start.mjs'), {
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
  const preborn = await start(
    'bench/floor-server.ts',
    { DATABASE_URL: dbUrl, PORT: String(prebornPort), FLOOR_PREBORN: '1' },
    /ready/,
  );
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
    const prebornUrl = `http://127.0.0.1:${prebornPort}`;
    // Warm the servers (JIT, pools) before measuring.
    await load('warm-up', negotiate, { action: 'read-resource', args: { name: RESOURCE } }, token);
    await load('warm-up', `${floorUrl}/read/${CONV}/${RESOURCE}`, {});
    await load('warm-up', `${prebornUrl}/read/${CONV}/${RESOURCE}`, {});
    const reads = await inTurns(
      () => load('floor: SELECT by primary key', `${floorUrl}/read/${CONV}/${RESOURCE}`, {}),
      () => load(`${PREBORN} SELECT`, `${prebornUrl}/read/${CONV}/${RESOURCE}`, {}),
      () => load('negotiate read-resource', negotiate, { action: 'read-resource', args: { name: RESOURCE } }, token),
    );
    const updates = await inTurns(
      () => load('floor: UPDATE ... RETURNING', `${floorUrl}/update/${CONV}/${RESOURCE}`, { data: update.data }),
      () => load(`${PREBORN} UPDATE`, `${prebornUrl}/update/${CONV}/${RESOURCE}`, { data: update.data }),
      () => load('negotiate update-resource', negotiate, { action: 'update-resource', args: update }, token),
    );
    return [...reads, ...updates];
  } finally {
    service.kill('SIGTERM');
    floor.kill('SIGTERM');
    preborn.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

/** The floor through the service's server construction (src/http/express-server.ts), for comparison. */
const PREBORN = '(for comparison) floor, prototypes preset:';

export function formatHttpBench(rows: HttpBenchRow[]): string {
  const kind = (name: string): string => (/read|SELECT/.test(name) ? 'SELECT' : 'UPDATE');
  const floorOf = (name: string): HttpBenchRow | undefined =>
    rows.find((r) => r.case.startsWith('floor') && r.case.includes(kind(name)));
  const prebornOf = (name: string): HttpBenchRow | undefined =>
    rows.find((r) => r.case.startsWith(PREBORN) && r.case.includes(kind(name)));
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
  lines.push('');
  for (const r of rows) {
    if (!r.case.startsWith('negotiate')) continue;
    const floor = floorOf(r.case);
    const preborn = prebornOf(r.case);
    const each = (of: HttpBenchRow): string => r.rounds.map((n, i) => (n / of.rounds[i]!).toFixed(2)).join(', ');
    const medianOf = (of: HttpBenchRow): string => median(r.rounds.map((n, i) => n / of.rounds[i]!)).toFixed(2);
    if (floor) {
      lines.push(`${r.case} vs the floor, round by round: ${each(floor)} (median ${medianOf(floor)})`);
      // Little's law: with CONNECTIONS requests always in flight, each takes CONNECTIONS / throughput.
      const perCall = (row: HttpBenchRow): number => (CONNECTIONS / row.requestsPerSec) * 1e6;
      lines.push(
        `${r.case}: ${perCall(r).toFixed(0)} µs a call at ${CONNECTIONS} connection(s), the floor ${perCall(floor).toFixed(0)} µs: ` +
          `${(perCall(r) - perCall(floor)).toFixed(0)} µs added`,
      );
    }
    if (preborn) {
      const mean = (r.requestsPerSec / preborn.requestsPerSec).toFixed(2);
      lines.push(
        `${r.case} vs the floor with prototypes preset: ${mean} (rounds: ${each(preborn)}; median ${medianOf(preborn)})`,
      );
    }
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
