/**
 * One upstream request's own abort signal, following its caller's and letting
 * go of it when the request ends.
 *
 * Why: the MCP SDK's HTTP transport hands its one long-lived signal to every
 * request. fetch hangs an abort listener on the signal it is given and only
 * a garbage collection takes it off again (a FinalizationRegistry), so that
 * signal carried up to thousands of listeners, and adding one walks all those
 * before it: measured ~0.3 ms of the gateway's CPU a remote call in a CPU
 * profile, and a MaxListenersExceededWarning. Here the caller's signal holds
 * one listener per request in flight, removed when its response ends or fails.
 */
import { getMaxListeners, setMaxListeners } from 'node:events';
import type { Agent, Dispatcher } from 'undici';

// One listener per request in flight on one connection: many at once is normal, not a leak (fetch's own figure).
const MAX_IN_FLIGHT_LISTENERS = 1500;

export interface FollowedSignal {
  /** The request's own signal (undefined when the caller gave none). */
  signal: AbortSignal | undefined;
  /** The dispatcher to send the request with: lets go of the caller's signal when the response ends or fails. */
  dispatcher: Dispatcher;
  /** Lets go of the caller's signal now (the request failed before it was sent); idempotent. */
  release(): void;
}

export function followSignal(agent: Agent, caller: AbortSignal | undefined): FollowedSignal {
  if (!caller) return { signal: undefined, dispatcher: agent, release: () => undefined };
  const own = new AbortController();
  if (caller.aborted) {
    own.abort(caller.reason);
    return { signal: own.signal, dispatcher: agent, release: () => undefined };
  }
  const onAbort = () => own.abort(caller.reason);
  const max = getMaxListeners(caller);
  if (max !== 0 && max < MAX_IN_FLIGHT_LISTENERS) setMaxListeners(MAX_IN_FLIGHT_LISTENERS, caller);
  caller.addEventListener('abort', onAbort, { once: true });
  const release = () => caller.removeEventListener('abort', onAbort);
  return { signal: own.signal, dispatcher: agent.compose(releasingOnEnd(release)), release };
}

/** An interceptor that calls `release` once the response has ended or failed, otherwise passing everything through. */
function releasingOnEnd(release: () => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, status, headers, socket) =>
        handler.onRequestUpgrade?.(controller, status, headers, socket),
      onResponseStart: (controller, status, headers, message) =>
        handler.onResponseStart?.(controller, status, headers, message),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => {
        release();
        handler.onResponseEnd?.(controller, trailers);
      },
      onResponseError: (controller, error) => {
        release();
        handler.onResponseError?.(controller, error);
      },
    });
}
