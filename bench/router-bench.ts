/**
 * Micro-benchmark of the intent router: per-call latency of exact and
 * approximate routing at 10, 1,000 and 10,000 registered actions.
 *
 *   npx tsx bench/router-bench.ts
 *
 * One call takes well under a microsecond on the exact path, below the
 * timer's useful resolution, so calls are timed in batches and each sample is
 * a batch's mean per call; p50/p99 are over those samples (so p99 shows slow
 * batches, e.g. a GC pause, not single slow calls).
 */
import { IntentRouter, type RouterEntry } from '../src/core/intent-router';
import { qualifiedName } from '../src/core/naming';

export interface RouterBenchRow {
  /** Registered actions. */
  actions: number;
  case: string;
  p50Us: number;
  p99Us: number;
  samples: number;
  callsPerSample: number;
  /** Time to build this router, once. */
  buildMs: number;
}

const SIZES = [10, 1_000, 10_000];
const ACTIONS_PER_TOOL = 10;
const VERBS = ['create', 'read', 'update', 'delete', 'list', 'search', 'export', 'import', 'sync', 'archive'];
const NOUNS = [
  'invoice',
  'customer',
  'order',
  'shipment',
  'ticket',
  'report',
  'payment',
  'account',
  'product',
  'message',
];
const MIN_CONFIDENCE = 0.8;
/** Distinct queries cycled through, so no single name stays hot in a cache. */
const QUERY_POOL = 1_000;
/** A sample should last at least this long, well above the timer's resolution. */
const TARGET_SAMPLE_NS = 1_000_000;
const MAX_CALLS_PER_SAMPLE = 1_000;
const WARMUP_NS = 150_000_000n;
/** Per case; 3 sizes x 5 cases keeps the whole run near 20 s. */
const CASE_BUDGET_NS = 1_000_000_000n;
const MIN_SAMPLES = 30;

interface BenchCase {
  name: string;
  /** What each query must route to; checked once before timing. */
  expected: 'ok' | 'no_tool';
  queries: string[];
}

/** `a`, `b`, ..., `z`, `ba`, ...: a letters-only suffix, so camelCase variants normalise back exactly. */
function letters(n: number): string {
  let s = '';
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return s;
}

/** `count` actions over tools of ACTIONS_PER_TOOL each, all bare names distinct. */
function syntheticEntries(count: number): RouterEntry[] {
  const entries: RouterEntry[] = [];
  for (let i = 0; i < count; i++) {
    const t = Math.floor(i / ACTIONS_PER_TOOL);
    const noun = NOUNS[t % NOUNS.length] ?? 'item';
    const verb = VERBS[i % ACTIONS_PER_TOOL] ?? 'run';
    entries.push({ tool: `svc-${letters(t)}`, action: `${verb}-${noun}-${letters(t)}` });
  }
  return entries;
}

function camelCase(kebab: string): string {
  return kebab.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Swaps the 2nd and 3rd characters: one transposition, distance 1. */
function typo(name: string): string {
  return name.charAt(0) + name.charAt(2) + name.charAt(1) + name.slice(3);
}

/** The same name under a verb no tool uses: nothing routes, the shared words are suggested. */
function unknownVerb(name: string): string {
  return `frob${name.slice(name.indexOf('-'))}`;
}

function casesFor(entries: RouterEntry[]): BenchCase[] {
  const step = Math.max(1, Math.floor(entries.length / QUERY_POOL));
  const picked = entries.filter((_, i) => i % step === 0).slice(0, QUERY_POOL);
  return [
    { name: 'exact bare', expected: 'ok', queries: picked.map((e) => e.action) },
    { name: 'exact canonical', expected: 'ok', queries: picked.map((e) => qualifiedName(e.tool, e.action)) },
    { name: 'approx camelCase', expected: 'ok', queries: picked.map((e) => camelCase(e.action)) },
    { name: 'approx typo', expected: 'ok', queries: picked.map((e) => typo(e.action)) },
    // The slowest path: every stage runs, then suggestions (shared words) are ranked.
    { name: 'miss (no_tool)', expected: 'no_tool', queries: picked.map((e) => unknownVerb(e.action)) },
  ];
}

/** Keeps the optimiser from discarding route calls whose result is unused. */
let sink = 0;

function runBatch(router: IntentRouter<RouterEntry>, queries: string[], start: number, calls: number): number {
  let acc = 0;
  for (let k = 0; k < calls; k++) {
    const result = router.route(queries[(start + k) % queries.length] ?? '');
    if (result.kind === 'ok') acc += result.confidence;
  }
  return acc;
}

/** Runs for WARMUP_NS (JIT warm-up) and returns an estimate of one call's cost. */
function warmUp(router: IntentRouter<RouterEntry>, queries: string[]): number {
  let calls = 0;
  const begin = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < WARMUP_NS) {
    sink += runBatch(router, queries, calls, 10);
    calls += 10;
    elapsed = process.hrtime.bigint() - begin;
  }
  return Number(elapsed) / calls;
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i] ?? Number.NaN;
}

function checkCase(router: IntentRouter<RouterEntry>, c: BenchCase): void {
  for (const q of c.queries) {
    const kind = router.route(q).kind;
    if (kind !== c.expected) throw new Error(`${c.name}: ${q} routed ${kind}, expected ${c.expected}`);
  }
}

function measure(router: IntentRouter<RouterEntry>, c: BenchCase, actions: number, buildMs: number): RouterBenchRow {
  checkCase(router, c);
  const nsPerCall = warmUp(router, c.queries);
  const callsPerSample = Math.max(1, Math.min(MAX_CALLS_PER_SAMPLE, Math.ceil(TARGET_SAMPLE_NS / nsPerCall)));
  const perCallUs: number[] = [];
  const begin = process.hrtime.bigint();
  let offset = 0;
  while (perCallUs.length < MIN_SAMPLES || process.hrtime.bigint() - begin < CASE_BUDGET_NS) {
    const t0 = process.hrtime.bigint();
    sink += runBatch(router, c.queries, offset, callsPerSample);
    const t1 = process.hrtime.bigint();
    perCallUs.push(Number(t1 - t0) / 1_000 / callsPerSample);
    offset += callsPerSample;
  }
  perCallUs.sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    actions,
    case: c.name,
    p50Us: round(percentile(perCallUs, 0.5)),
    p99Us: round(percentile(perCallUs, 0.99)),
    samples: perCallUs.length,
    callsPerSample,
    buildMs: Math.round(buildMs * 10) / 10,
  };
}

export async function runRouterBench(): Promise<RouterBenchRow[]> {
  const rows: RouterBenchRow[] = [];
  for (const size of SIZES) {
    const entries = syntheticEntries(size);
    const t0 = process.hrtime.bigint();
    const router = IntentRouter.build(entries, { minConfidence: MIN_CONFIDENCE });
    const buildMs = Number(process.hrtime.bigint() - t0) / 1e6;
    for (const c of casesFor(entries)) {
      rows.push(measure(router, c, size, buildMs));
      // Let timers and I/O run between cases; the bench may share a process.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  if (Number.isNaN(sink)) throw new Error('unreachable: keeps `sink` observable');
  return rows;
}

export function formatRouterBench(rows: RouterBenchRow[]): string {
  const header = [
    '| actions | case | p50 µs/call | p99 µs/call | samples × calls | build ms |',
    '|---:|---|---:|---:|---:|---:|',
  ];
  const body = rows.map(
    (r) =>
      `| ${r.actions.toLocaleString('en-US')} | ${r.case} | ${r.p50Us.toFixed(3)} | ${r.p99Us.toFixed(3)} | ${r.samples} × ${r.callsPerSample} | ${r.buildMs} |`,
  );
  return [...header, ...body].join('\n');
}

if (require.main === module) {
  runRouterBench()
    .then((rows) => {
      console.log(`Intent router, Node ${process.version}, minConfidence ${MIN_CONFIDENCE}\n`);
      console.log(formatRouterBench(rows));
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    });
}
