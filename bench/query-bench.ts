/**
 * Queries over the shared context (API.md, "Shared context, M6", Queries):
 * one conversation of 100,000 resources (and a second of 20,000, so the
 * data index holds other conversations' rows too), then pages of 100 through
 * the service's own query path (src/core/resource-query.ts over
 * src/db/resource-query.ts: the filtered ones in their short transaction
 * with statement_timeout) for several filters, each against the floor
 * measured in the same run: the unfiltered page, the plain listing's one
 * statement. Rows are the median and p95 over BENCH_QUERIES calls each, taken
 * in turns so a change in the machine's speed weighs on all alike. Prints
 * the `EXPLAIN (ANALYZE, BUFFERS)` plans of the equality filters too.
 *
 *   BENCH_DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/query-bench.ts
 *
 * A fresh database `orchestrator_query_bench` is created on that server and
 * dropped again at the end.
 */
import { performance } from 'node:perf_hooks';
import { parseIntoClientConfig } from 'pg-connection-string';
import { withAdmin } from '../test/support/admin-client';
import { queryPage } from '../src/core/resource-query';
import type { ResourceQuery } from '../src/core/tool-interface';
import { openDatabase } from '../src/db/database';
import { applyMigrations } from '../src/db/migrator';
import { SqlResourceQueries, querySql } from '../src/db/resource-query';
import { SqlResourceStore } from '../src/db/resource-store';
import { toListQuery } from '../src/core/resource-query';

const DB_NAME = 'orchestrator_query_bench';
const BIG = 'bench-big';
const OTHER = 'bench-other';
const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);

export interface QueryBenchRow {
  label: string;
  /** Rows on the page (of at most 100). */
  rows: number;
  p50: number;
  p95: number;
  /** p50 over the floor's p50. */
  ratio: number;
}

export interface QueryBenchResult {
  rows: QueryBenchRow[];
  plans: Array<{ label: string; plan: string }>;
}

const FLOOR = 'floor: the unfiltered page (name order)';
const CASES: Array<{ label: string; query: ResourceQuery }> = [
  { label: FLOOR, query: {} },
  { label: 'unfiltered, sort=-updatedAt', query: { sort: '-updatedAt' } },
  { label: '`$.status == "open"` (25 % match)', query: { filter: '$.status == "open"' } },
  { label: '`$.owner == "u7"` (0.2 %: 200 rows)', query: { filter: '$.owner == "u7"' } },
  { label: '`$.ref == "ref-31337"` (one row)', query: { filter: '$.ref == "ref-31337"' } },
  {
    label: '`$.status == "none"` (no row here; 20,000 in the other conversation)',
    query: { filter: '$.status == "none"' },
  },
  { label: '`$.owner == "u7"`, sort=-updatedAt', query: { filter: '$.owner == "u7"', sort: '-updatedAt' } },
  {
    label: '`$.status == "open" && $.amount > 900` (2.5 %)',
    query: { filter: '$.status == "open" && $.amount > 900' },
  },
];

/** Both conversations, written in a few statements (the bench measures reads, not writes). */
async function load(db: ReturnType<typeof openDatabase>): Promise<void> {
  await db.pool.query(`INSERT INTO conversations (id) VALUES ($1), ($2)`, [BIG, OTHER]);
  await db.pool.query(
    `INSERT INTO resources (conversation_id, name, data, created_by, updated_by, created_at, updated_at)
     SELECT $1, 'r-' || lpad(i::text, 6, '0'),
            jsonb_build_object('status', (ARRAY['open', 'closed', 'pending', 'archived'])[1 + i % 4],
                               'amount', i % 1000, 'owner', 'u' || (i % 500), 'ref', 'ref-' || i,
                               'tags', jsonb_build_array('t' || (i % 7))),
            CASE WHEN i % 3 = 0 THEN 'data-tool' ELSE 'client' END, 'client',
            now() - make_interval(secs => i), now() - make_interval(secs => (i * 7919) % $2)
     FROM generate_series(1, $2) AS i`,
    [BIG, RESOURCES],
  );
  await db.pool.query(
    `INSERT INTO resources (conversation_id, name, data, created_by, updated_by)
     SELECT $1, 'o-' || i, jsonb_build_object('status', 'none', 'owner', 'u' || (i % 500)), 'client', 'client'
     FROM generate_series(1, 20000) AS i`,
    [OTHER],
  );
  await db.pool.query('VACUUM ANALYZE resources');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function measure(store: SqlResourceStore): Promise<QueryBenchRow[]> {
  const times = CASES.map(() => [] as number[]);
  const rows = CASES.map(() => 0);
  // Warm-up: plans, the pool's connections, the pages in shared buffers.
  for (const c of CASES) for (let i = 0; i < 10; i++) await queryPage(store, BIG, c.query);
  for (let i = 0; i < QUERIES; i++) {
    for (const [k, c] of CASES.entries()) {
      const start = performance.now();
      const page = await queryPage(store, BIG, c.query);
      times[k]!.push(performance.now() - start);
      rows[k] = page.resources.length;
    }
  }
  const floor = percentile(
    [...times[0]!].sort((a, b) => a - b),
    0.5,
  );
  return CASES.map((c, k) => {
    const sorted = [...times[k]!].sort((a, b) => a - b);
    const p50 = percentile(sorted, 0.5);
    return { label: c.label, rows: rows[k]!, p50, p95: percentile(sorted, 0.95), ratio: p50 / floor };
  });
}

/** The floor as it was before migration 20260701000100: no index gives the bytewise name order. */
async function withoutNameIndex(
  db: ReturnType<typeof openDatabase>,
  store: SqlResourceStore,
  floor: number,
): Promise<QueryBenchRow> {
  await db.pool.query('DROP INDEX resources_conversation_id_name_c_idx');
  for (let i = 0; i < 5; i++) await queryPage(store, BIG, {});
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < Math.min(QUERIES, 50); i++) {
    const start = performance.now();
    rows = (await queryPage(store, BIG, {})).resources.length;
    times.push(performance.now() - start);
  }
  const sorted = times.sort((a, b) => a - b);
  const p50 = percentile(sorted, 0.5);
  const label = '(for comparison) the unfiltered page without the `name COLLATE "C"` index, as before';
  return { label, rows, p50, p95: percentile(sorted, 0.95), ratio: p50 / floor };
}

/** The plan Postgres chose for a case, with the statement the store sends (its values inlined by EXPLAIN's parameters). */
async function plan(db: ReturnType<typeof openDatabase>, query: ResourceQuery): Promise<string> {
  const { text, values } = querySql(BIG, toListQuery(query));
  const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

export async function runQueryBench(serverUrl: string): Promise<QueryBenchResult> {
  await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
  const u = new URL(serverUrl);
  u.pathname = `/${DB_NAME}`;
  const client = parseIntoClientConfig(u.toString());
  const db = openDatabase({ client, poolSize: 4 });
  try {
    await applyMigrations({ client });
    await load(db);
    const store = new SqlResourceStore(db.pool, new SqlResourceQueries(db.pool, 2000));
    const rows = await measure(store);
    const plans = [];
    for (const c of CASES.slice(2, 6)) plans.push({ label: c.label, plan: await plan(db, c.query) });
    rows.push(await withoutNameIndex(db, store, rows[0]!.p50));
    return { rows, plans };
  } finally {
    await db.close();
    await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }
}

export function formatQueryBench(result: QueryBenchResult): string {
  const lines = [
    `${RESOURCES.toLocaleString('en')} resources in one conversation, pages of 100, ${QUERIES} calls per row`,
    '',
    '| query | rows | p50 ms | p95 ms | p50 / floor |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...result.rows.map(
      (r) => `| ${r.label} | ${r.rows} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} | ${r.ratio.toFixed(2)} |`,
    ),
  ];
  for (const p of result.plans) lines.push('', `Plan of ${p.label}:`, '', '```', p.plan, '```');
  return lines.join('\n');
}

if (require.main === module) {
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  runQueryBench(url)
    .then((result) => process.stdout.write(`${formatQueryBench(result)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    });
}
