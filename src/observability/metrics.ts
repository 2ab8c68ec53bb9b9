/**
 * Prometheus metrics (API.md, Operations), served at GET /metrics.
 *
 * Cost on the hot path: a request's and a negotiation's recording is a few
 * Map lookups and a bucket count on a cached series (BucketHistogram below;
 * prom-client's own histogram observe validates and hashes the labels on
 * every call, several µs each). prom-client's registry formats everything.
 * Gauges that read state (the pool, pending approvals) are read at scrape
 * time, never per request. No label carries a conversation id, a resource
 * name, a key or anything else a caller chooses freely (src/observability/labels.ts).
 */
import type { Pool } from 'pg';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BucketHistogram, type Observe } from './metrics-histogram';
import { ParticipantMetrics } from './participant-metrics';
import type { Logger } from '../logger';
import type { ToolLabels } from './labels';

/** Seconds: the negotiate path takes milliseconds; the tail up to the tool timeout. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Process metrics (CPU, memory, event loop, GC) are the process's, not an
 * app's: one registry for the process, so tests that build several apps do
 * not start several collectors.
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * A negotiate_calls_total series, counted here and added to prom-client's
 * counter at scrape time: a child's inc() costs about as much as a histogram
 * observe (prom-client hashes the labels on every call), this a number's ++.
 */
interface CallCount {
  n: number;
  flushed: number;
  child: { inc(value: number): void };
}

interface NegotiationSeries {
  duration: Observe;
  calls: Map<string, CallCount>;
}

export interface MetricsSources {
  pool: Pick<Pool, 'totalCount' | 'idleCount' | 'waitingCount'>;
  /** Pending approval requests of the whole deployment (the database's count). */
  pendingApprovals: () => Promise<number>;
  logger: Logger;
}

/** How long one read of approvals_pending answers scrapes (an unauthenticated endpoint must not drive the database). */
const PENDING_MAX_AGE_MS = 1000;

/**
 * negotiate_calls_total: each call is counted in its series (a Map lookup and an addition on the hot
 * path); what was counted since the last scrape is added to prom-client's counter when it is read.
 */
function negotiateCallsCounter(
  series: Map<string, Map<string, NegotiationSeries>>,
  registers: Registry[],
): Counter<'tool' | 'action' | 'outcome'> {
  return new Counter({
    name: 'negotiate_calls_total',
    help: 'negotiate calls (REST and MCP tools/call) by tool, action and outcome (ok or the result code).',
    labelNames: ['tool', 'action', 'outcome'],
    registers,
    collect() {
      for (const byAction of series.values()) {
        for (const s of byAction.values()) {
          for (const count of s.calls.values()) {
            if (count.n === count.flushed) continue;
            count.child.inc(count.n - count.flushed);
            count.flushed = count.n;
          }
        }
      }
    },
  });
}

/** The gauges read at scrape time: the database pool, then the deployment's pending approvals. */
function registerScrapeGauges(sources: MetricsSources, registers: Registry[]): void {
  const { pool } = sources;
  // Registered (so read) before approvals_pending: the scrape's own count query must not show in the pool.
  new Gauge({
    name: 'db_pool_connections',
    help: "This replica's database pool: idle, busy (checked out) connections, and waiting requests for one.",
    labelNames: ['state'],
    registers,
    collect() {
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'busy' }, pool.totalCount - pool.idleCount);
      this.set({ state: 'waiting' }, pool.waitingCount);
    },
  });
  let pending: { at: number; count: Promise<number> } | undefined;
  new Gauge({
    name: 'approvals_pending',
    help: 'Approval requests waiting for a decision, in the whole deployment (read from the database at scrape time, at most once a second).',
    registers,
    async collect() {
      try {
        // /metrics needs no credentials: however often it is scraped, the count is read at most once a
        // second, by one query at a time (concurrent scrapes share it).
        const now = Date.now();
        if (!pending || now - pending.at >= PENDING_MAX_AGE_MS) {
          const read = sources.pendingApprovals();
          pending = { at: now, count: read };
          read.catch(() => (pending = undefined));
        }
        this.set(await pending.count);
      } catch (err) {
        // The other metrics still answer; an unknown count is NaN, not a stale or made-up number.
        sources.logger.warn({ err }, 'approvals_pending: the database could not be read');
        this.set(NaN);
      }
    },
  });
}

export class Metrics {
  private readonly registry = new Registry();
  private readonly httpDuration: BucketHistogram;
  private readonly negotiateCalls: Counter<'tool' | 'action' | 'outcome'>;
  private readonly negotiateDuration: BucketHistogram;
  /** method → route → status → child: no string built per request. */
  private readonly httpSeries = new Map<string, Map<string, Map<number, Observe>>>();
  /** tool → action → series. */
  private readonly negotiationSeries = new Map<string, Map<string, NegotiationSeries>>();
  /** participant_up and participant_call_duration_seconds. */
  readonly participants: ParticipantMetrics;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    this.httpDuration = new BucketHistogram(
      'http_request_duration_seconds',
      'HTTP requests by method, route template and status, from arrival to the last byte sent.',
      ['method', 'route', 'status'],
      DURATION_BUCKETS,
      this.registry,
    );
    this.negotiateCalls = negotiateCallsCounter(this.negotiationSeries, registers);
    this.negotiateDuration = new BucketHistogram(
      'negotiate_duration_seconds',
      'Time to decide and run one negotiate call, by tool and action.',
      ['tool', 'action'],
      DURATION_BUCKETS,
      this.registry,
    );
    this.participants = new ParticipantMetrics(this.registry);
    registerScrapeGauges(sources, registers);
  }

  /** One finished HTTP request. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.httpSeries.get(method);
    if (!byRoute) this.httpSeries.set(method, (byRoute = new Map<string, Map<number, Observe>>()));
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map<number, Observe>()));
    let child = byStatus.get(status);
    if (!child) byStatus.set(status, (child = this.httpDuration.labels(method, route, String(status))));
    child.observe(seconds);
  }

  /** One finished negotiation. */
  observeNegotiation(labels: ToolLabels, outcome: string, seconds: number): void {
    let byAction = this.negotiationSeries.get(labels.tool);
    if (!byAction) this.negotiationSeries.set(labels.tool, (byAction = new Map<string, NegotiationSeries>()));
    let series = byAction.get(labels.action);
    if (!series) {
      series = { duration: this.negotiateDuration.labels(labels.tool, labels.action), calls: new Map() };
      byAction.set(labels.action, series);
    }
    let calls = series.calls.get(outcome);
    if (!calls) {
      calls = { n: 0, flushed: 0, child: this.negotiateCalls.labels(labels.tool, labels.action, outcome) };
      series.calls.set(outcome, calls);
    }
    calls.n++;
    series.duration.observe(seconds);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition of this app's metrics and the process's. */
  async scrape(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }
}
