/**
 * src/observability/metrics.ts's BucketHistogram (the request and negotiate
 * duration histograms): the same observations give the same exposition text,
 * byte for byte, as prom-client's own Histogram.
 */
import { Histogram, Registry } from 'prom-client';
import { BucketHistogram } from '../../src/observability/metrics-histogram';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVED: Array<[string[], number]> = [
  [['GET', '/a', '200'], 0.0005],
  [['GET', '/a', '200'], 0.001], // on a bound: counted in it (le)
  [['POST', '/b"q', '404'], 0.05],
  [['GET', '/a', '200'], 7], // above the last bound: +Inf only
  [['POST', '/b"q', '404'], 0.1],
  [['GET', '/a', '500'], 0.0101],
];

it('writes what prom-client writes for the same observations', async () => {
  const theirs = new Registry();
  const reference = new Histogram({
    name: 'h_seconds',
    help: 'help text',
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers: [theirs],
  });
  const ours = new Registry();
  const light = new BucketHistogram('h_seconds', 'help text', ['method', 'route', 'status'], BUCKETS, ours);
  const series = new Map<string, { observe(v: number): void }>();
  for (const [labels, value] of OBSERVED) {
    reference.labels(...labels).observe(value);
    const key = labels.join('\u0000');
    if (!series.has(key)) series.set(key, light.labels(...labels));
    series.get(key)!.observe(value);
  }
  const expected = await theirs.metrics();
  expect(expected).toContain('h_seconds_bucket{le="+Inf",method="GET",route="/a",status="200"} 3');
  expect(await ours.metrics()).toBe(expected);
  ours.resetMetrics();
  theirs.resetMetrics();
  // prom-client forgets its series on reset; ours keeps them at zero (both mean: nothing since).
  expect(await ours.metrics()).toContain('h_seconds_count{method="GET",route="/a",status="200"} 0');
});
