/**
 * `npx tsx bench/events-idle-bench.ts [N]`: what N idle SSE subscribers (GET
 * /events, default 1,000) cost the real entry file on a Postgres server: its
 * resident memory before and after they connect, its CPU over 10 s with
 * them idle (and over 10 s with none, for the replica's own poll), and how
 * long one change takes to reach all of them. Needs a Postgres server that
 * allows CREATE DATABASE: BENCH_DATABASE_URL, else DATABASE_URL, else the
 * machine's postgresql://root@127.0.0.1:5432/postgres.
 */
import { readFileSync } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { TEST_ADMIN_TOKEN } from '../test/support/auth';
import { runMigrateCli, urlForDatabase } from '../test/support/db-server';
import { startServer } from '../test/support/spawn-server';

const N = Number(process.argv[2] ?? 1000);
const IDLE_MS = 10_000;
const CLOCK_TICKS = 100; // USER_HZ on Linux

async function admin(url: string, sql: string): Promise<void> {
  const c = new Client(parseIntoClientConfig(url));
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime
}

async function cpuOver(pid: number, ms: number): Promise<number> {
  const before = cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, ms));
  return (cpuSeconds(pid) - before) / (ms / 1000);
}

interface Stream {
  res: IncomingMessage;
  /** Resolves with performance.now() when a frame containing `marker` arrives. */
  when(marker: string): Promise<number>;
  close(): void;
}

function openStream(base: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/events`, { headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET /events: ${res.statusCode}`));
      res.setEncoding('utf8');
      const waiting: Array<{ marker: string; done: (t: number) => void }> = [];
      res.on('data', (chunk: string) => {
        for (const w of [...waiting]) {
          if (chunk.includes(w.marker)) {
            waiting.splice(waiting.indexOf(w), 1);
            w.done(performance.now());
          }
        }
      });
      resolve({
        res,
        when: (marker) => new Promise((done) => waiting.push({ marker, done })),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  const name = `events_idle_bench_${randomBytes(4).toString('hex')}`;
  await admin(url, `CREATE DATABASE "${name}"`);
  const dbUrl = urlForDatabase(url, name);
  const migrated = await runMigrateCli(dbUrl);
  if (migrated.status !== 0) throw new Error(migrated.stderr);
  const server = await startServer({
    DATABASE_URL: dbUrl,
    LOG_LEVEL: 'warn',
    EVENTS_MAX_STREAMS_PER_PRINCIPAL: String(N + 10),
  });
  const pid = server.child.pid!;
  const streams: Stream[] = [];
  try {
    // Warm the paths a stream takes, then measure from there.
    for (let i = 0; i < 20; i++) (await openStream(server.url)).close();
    await new Promise((r) => setTimeout(r, 2000));
    const cpuNone = await cpuOver(pid, IDLE_MS);
    const rssBefore = rssMb(pid);
    for (let i = 0; i < N; i++) streams.push(await openStream(server.url));
    await new Promise((r) => setTimeout(r, 2000));
    const rssAfter = rssMb(pid);
    const cpuIdle = await cpuOver(pid, IDLE_MS);

    const marker = `fanout-${randomBytes(4).toString('hex')}`;
    const arrivals = streams.map((s) => s.when(marker));
    const sent = performance.now();
    const res = await fetch(`${server.url}/conversations/bench/resources/${marker}`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: 1 }),
    });
    if (!res.ok) throw new Error(`PUT: ${res.status}`);
    const times = (await Promise.all(arrivals)).map((t) => t - sent).sort((a, b) => a - b);

    process.stdout.write(
      [
        `| idle SSE subscribers (GET /events) | ${N} |`,
        '|---|---|',
        `| server RSS before / after | ${rssBefore.toFixed(1)} MB / ${rssAfter.toFixed(1)} MB (+${(rssAfter - rssBefore).toFixed(1)} MB, ${(((rssAfter - rssBefore) * 1024) / N).toFixed(1)} KB each) |`,
        `| server CPU, no stream open (the replica's 250 ms poll) | ${(cpuNone * 100).toFixed(2)} % of a core |`,
        `| server CPU, ${N} idle streams | ${(cpuIdle * 100).toFixed(2)} % of a core |`,
        `| one change → all ${N} streams | median ${times[Math.floor(N / 2)]!.toFixed(0)} ms, last ${times[N - 1]!.toFixed(0)} ms |`,
      ].join('\n') + '\n',
    );
  } finally {
    for (const s of streams) s.close();
    server.child.kill('SIGTERM');
    await server.exited;
    await admin(url, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
