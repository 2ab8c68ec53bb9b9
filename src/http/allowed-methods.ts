/**
 * Which methods a path supports, read from the app's own router (the routes
 * tsoa registered and the hand-mounted ones), so a 405's Allow header can
 * never drift from what is really served.
 */
import type { Express } from 'express';

interface RouteLayer {
  route?: { methods: Record<string, boolean> };
  handle?: { stack?: RouteLayer[] };
  match(path: string): false | { path: string };
}

function collect(stack: RouteLayer[], path: string, into: Set<string>): void {
  for (const layer of stack) {
    let match: false | { path: string };
    try {
      match = layer.match(path);
    } catch {
      continue; // a parameter that does not decode cannot name a route
    }
    if (!match) continue;
    if (layer.route) {
      for (const [method, on] of Object.entries(layer.route.methods)) {
        if (on && method !== '_all') into.add(method.toUpperCase());
      }
    } else if (layer.handle?.stack) {
      // A mounted router: match the rest of the path inside it.
      collect(layer.handle.stack, path.slice(match.path.length) || '/', into);
    }
  }
}

/** The methods `path` is served with, sorted; empty when no route has this path. */
export function allowedMethods(app: Express, path: string): string[] {
  const methods = new Set<string>();
  collect((app.router as unknown as { stack: RouteLayer[] }).stack, path, methods);
  // Express answers HEAD with the GET route.
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
