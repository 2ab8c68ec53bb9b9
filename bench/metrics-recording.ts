/**
 * What recording costs per call (docs/BENCHMARKS.md, Observability): the
 * metrics' hot-path code in a tight loop, against a loop doing nothing, so
 * the number is the recording's own. Run: `npx tsx bench/metrics-recording.ts`.
 * Not part of `npm run bench` (that measures the service end to end).
 */
import pino from 'pino';
import type { NegotiationResult } from '../src/core/negotiation';
import { routeOf, toolLabels } from '../src/observability/labels';
import { Metrics } from '../src/observability/metrics';
import { negotiationObserver } from '../src/observability/observer';

const N = 2_000_000;
const metrics = new Metrics({
  pool: { totalCount: 0, idleCount: 0, waitingCount: 0 },
  pendingApprovals: async () => 0,
  logger: pino({ level: 'silent' }),
});
const req = { action: 'example-tool/greet', args: { name: 'x' } };
const result: NegotiationResult = {
  success: true,
  routing: { tool: 'example-tool', action: 'greet', confidence: 1, explicit: true },
};
const httpReq = { route: { path: '/conversations/:conversationId/negotiate' }, baseUrl: '' };

function time(label: string, f: (i: number) => void): number {
  for (let i = 0; i < N / 10; i++) f(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f(i);
  const ns = Number(process.hrtime.bigint() - start) / N;
  process.stdout.write(`${label.padEnd(58)} ${ns.toFixed(1)} ns/call\n`);
  return ns;
}

async function timeAsync(label: string, f: () => Promise<unknown>): Promise<number> {
  const n = N / 4;
  for (let i = 0; i < n / 10; i++) await f();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await f();
  const ns = Number(process.hrtime.bigint() - start) / n;
  process.stdout.write(`${label.padEnd(58)} ${ns.toFixed(1)} ns/call\n`);
  return ns;
}

async function main(): Promise<void> {
  let sink = 0;
  time('empty loop', (i) => (sink += i));
  time('routeOf (route template, cached)', () => (sink += routeOf(httpReq).length));
  time('toolLabels (from the routing)', () => (sink += toolLabels(req, result).tool.length));
  time('observeRequest (http_request_duration_seconds)', (i) =>
    metrics.observeRequest('POST', '/conversations/{conversationId}/negotiate', 200, (i % 100) / 1e4),
  );
  time('observeNegotiation (calls_total + duration_seconds)', (i) =>
    metrics.observeNegotiation(result.routing!, 'ok', (i % 100) / 1e4),
  );
  // For scale: the request log line every request already writes (to a sink that drops it).
  const log = pino({ level: 'info' }, { write: () => undefined });
  time('for scale: one request log line (pino, discarded)', (i) =>
    log.info(
      { reqId: 'x', method: 'POST', url: '/conversations/c/negotiate', status: 200, ms: i },
      'request completed',
    ),
  );
  const observer = negotiationObserver(metrics, undefined)!;
  const call = (): Promise<NegotiationResult> => Promise.resolve(result);
  const bare = await timeAsync('await call() alone', call);
  const observed = await timeAsync('await observer.observe(call) (metrics on, traces off)', () =>
    observer.observe('c', req, call),
  );
  process.stdout.write(`${'observer overhead per negotiate'.padEnd(58)} ${(observed - bare).toFixed(1)} ns/call\n`);
  if (sink === -1) process.stdout.write('');
}

void main();
