/**
 * What running a TOOLS_DIR tool in a worker thread costs per call: the same
 * module loaded in-process and isolated, each action called N times in a row
 * through ConversationManager.negotiate (permission check, run, commit: all
 * but HTTP) on one Postgres database.
 *
 *   BENCH_DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/isolation-bench.ts
 *
 * A database `orchestrator_isolation_bench` is created there and dropped at the end.
 */
import type { Principal } from '../src/core/principal';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseIntoClientConfig } from 'pg-connection-string';
import { wireServices } from '../src/bootstrap';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/database';
import { applyMigrations } from '../src/db/migrator';
import { createLogger } from '../src/logger';
import { withAdmin } from '../test/support/admin-client';

const N = Number(process.env.BENCH_CALLS ?? 1000);
const ROUNDS = 5;
const WARM_UP = 200;
const DB_NAME = 'orchestrator_isolation_bench';
const CONV = 'bench-isolation';

const TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'bench-tool', version: '1.0.0', description: 'Trivial actions for the isolation benchmark',
  actions: {
    'echo': defineAction({ description: 'Returns its args', level: 1, input: z.object({ text: z.string() }),
      handler: ({ text }) => ({ text }) }),
    'read-one': defineAction({ description: 'Reads one resource', level: 1, input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => (await ctx.sharedContext.getResource(name))?.data ?? null }),
  },
});
`;

const CASES: { name: string; action: string; args: Record<string, unknown> }[] = [
  { name: 'echo (no shared-context call)', action: 'bench-tool/echo', args: { text: 'hi' } },
  { name: 'read-one (one getResource)', action: 'bench-tool/read-one', args: { name: 'doc' } },
];

/** Mean microseconds per call of `action`, `calls` calls one after another. */
/** The bench acts as an admin: it measures the tools, not access decisions. */
const BENCH_ADMIN: Principal = { role: 'admin', subject: 'bench' };

type Manager = ReturnType<typeof wireServices>['services']['manager'];

async function measure(
  manager: Manager,
  action: string,
  args: Record<string, unknown>,
  calls: number,
): Promise<number> {
  const call = async (): Promise<void> => {
    const out = await manager.negotiate(BENCH_ADMIN, CONV, { action, args });
    if (!out.success) throw new Error(`${action}: ${JSON.stringify(out)}`);
  };
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await call();
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Medians over rounds that alternate the two wirings, so that JIT warm-up and
 * the load of a shared machine fall on both alike.
 */
async function compare(
  a: Manager,
  b: Manager,
  action: string,
  args: Record<string, unknown>,
): Promise<[number, number]> {
  await measure(a, action, args, WARM_UP);
  await measure(b, action, args, WARM_UP);
  const as: number[] = [];
  const bs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    as.push(await measure(a, action, args, N));
    bs.push(await measure(b, action, args, N));
  }
  return [median(as), median(bs)];
}

async function main(): Promise<void> {
  const serverUrl =
    process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const toolsDir = mkdtempSync(join(tmpdir(), 'isolation-bench-'));
  writeFileSync(join(toolsDir, 'bench-tool.js'), TOOL);
  const client = parseIntoClientConfig(u.toString());
  const db = openDatabase({ client, poolSize: 5 });
  const wirings: ReturnType<typeof wireServices>[] = [];
  try {
    await applyMigrations({ client });
    const config = loadConfig({ LOG_LEVEL: 'warn', TOOLS_DIR: toolsDir });
    const logger = createLogger(config.logLevel);
    const inProcess = wireServices(config, logger, db, { isolateToolsDir: false });
    const isolated = wireServices(config, logger, db, { isolateToolsDir: true });
    wirings.push(inProcess, isolated);
    await Promise.all(wirings.map((w) => w.registry.load()));
    await inProcess.services.manager.negotiate(BENCH_ADMIN, CONV, { action: 'upgrade:data-tool:level-2' });
    await inProcess.services.manager.negotiate(BENCH_ADMIN, CONV, {
      action: 'create-resource',
      args: { name: 'doc', data: 1 },
    });

    process.stdout.write(`Median of ${ROUNDS} rounds of ${N} sequential calls, Node ${process.version}\n\n`);
    process.stdout.write('| action | in-process µs/call | isolated µs/call | added µs/call |\n|---|---:|---:|---:|\n');
    for (const c of CASES) {
      const [a, b] = await compare(inProcess.services.manager, isolated.services.manager, c.action, c.args);
      process.stdout.write(`| ${c.name} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(b - a).toFixed(0)} |\n`);
    }
  } finally {
    for (const w of wirings) await w.registry.close();
    await db.close();
    rmSync(toolsDir, { recursive: true, force: true });
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
