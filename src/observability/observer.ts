/**
 * The NegotiationObserver the domain is given (src/core/ports/): each
 * negotiation counted and timed (metrics), inside its span (traces), either
 * or both, or none at all (no observer) when both are off.
 */
import type { NegotiationObserver } from '../core/ports';
import type { NegotiateRequest, NegotiationResult } from '../core/negotiation';
import { errorOutcome, resultOutcome, toolLabels } from './labels';
import type { Metrics } from './metrics';
import type { Tracing } from './tracing-state';

async function measured(
  metrics: Metrics,
  req: NegotiateRequest,
  call: () => Promise<NegotiationResult>,
): Promise<NegotiationResult> {
  const start = performance.now();
  let result: NegotiationResult;
  try {
    result = await call();
  } catch (err) {
    metrics.observeNegotiation(toolLabels(req, undefined), errorOutcome(err), (performance.now() - start) / 1000);
    throw err;
  }
  metrics.observeNegotiation(toolLabels(req, result), resultOutcome(result), (performance.now() - start) / 1000);
  return result;
}

export function negotiationObserver(
  metrics: Metrics | undefined,
  tracing: Tracing | undefined,
): NegotiationObserver | undefined {
  if (metrics && tracing) {
    return {
      observe: (id, req, call) => tracing.negotiation(id, req, () => measured(metrics, req, call)),
      upstream: (remote) => tracing.upstream(remote),
    };
  }
  if (metrics) return { observe: (_id, req, call) => measured(metrics, req, call) };
  if (tracing) {
    return { observe: (id, req, call) => tracing.negotiation(id, req, call), upstream: (r) => tracing.upstream(r) };
  }
  return undefined;
}
