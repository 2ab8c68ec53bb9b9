/**
 * Starts OpenTelemetry tracing when the standard variables ask for it. The
 * entry file (src/server.ts) imports this first: instrumentations patch
 * `http` and `pg` as they load, so they must be registered before anything
 * loads them. With no OTLP endpoint set, nothing of the SDK is loaded.
 */
import { setActiveTracing, tracingRequested } from './tracing-state';

if (tracingRequested(process.env)) {
  // A synchronous require on purpose: an import() would settle after the
  // entry file's other imports had loaded http, express and pg unpatched.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startTracing, TracingConfigError } = require('./tracing') as typeof import('./tracing');
  try {
    setActiveTracing(startTracing(process.env));
  } catch (err) {
    if (!(err instanceof TracingConfigError)) throw err;
    // As src/config.ts's errors: the setting named, no stack.
    process.stderr.write(`Invalid configuration:\n  - ${err.message}\n`);
    process.exit(1);
  }
}
