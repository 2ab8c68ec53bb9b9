/**
 * Which methods a path supports, read from the app's own router (the routes
 * tsoa registered and the hand-mounted ones), so a 405's Allow header can
 * never drift from what is really served.
 *
 * Where a literal segment and a parameter could both take a path
 * (`/conversations/{id}/permissions/history` and `.../permissions/{tool}`),
 * the literal one is that URL, as OpenAPI reads its paths: the URL is the
 * history, and its Allow lists GET only. methodGuard (./middleware) refuses the other
 * route's methods there, so Allow stays exactly what is served.
 */
import type { Express } from 'express';

interface RouteLayer {
  route?: { path: unknown; methods: Record<string, boolean>; stack?: Array<{ handle?: unknown }> };
  handle?: { stack?: RouteLayer[] };
  match(path: string): false | { path: string };
}

interface MatchedRoute {
  segments: string[];
  methods: string[];
}

function stackOf(app: Express): RouteLayer[] {
  return (app.router as unknown as { stack: RouteLayer[] }).stack;
}

const isParameter = (segment: string): boolean => segment.startsWith(':') || segment.startsWith('*');

/** Marks a GET handler that refuses HEAD itself (a GET that opens a stream): its path's Allow has no HEAD. */
const REFUSES_HEAD = Symbol('refusesHead');

export function refusesHead<T extends object>(handler: T): T {
  return Object.assign(handler, { [REFUSES_HEAD]: true });
}

function routeMethods(route: NonNullable<RouteLayer['route']>): string[] {
  const methods = Object.entries(route.methods)
    .filter(([method, on]) => on && method !== '_all')
    .map(([method]) => method.toUpperCase());
  // Express answers HEAD with the GET route, unless that route refuses it.
  const headless = route.stack?.some((l) => typeof l.handle === 'function' && REFUSES_HEAD in l.handle);
  if (methods.includes('GET') && !headless) methods.push('HEAD');
  return methods;
}

function collect(stack: RouteLayer[], path: string, prefix: string, into: MatchedRoute[]): void {
  for (const layer of stack) {
    let match: false | { path: string };
    try {
      match = layer.match(path);
    } catch {
      continue; // a parameter that does not decode cannot name a route
    }
    if (!match) continue;
    if (layer.route) {
      const routePath = typeof layer.route.path === 'string' ? prefix + layer.route.path : prefix;
      into.push({ segments: routePath.split('/'), methods: routeMethods(layer.route) });
    } else if (layer.handle?.stack) {
      // A mounted router: match the rest of the path inside it.
      collect(layer.handle.stack, path.slice(match.path.length) || '/', prefix + match.path, into);
    }
  }
}

/** true when `a` has a literal segment where `b`, otherwise alike so far, has a parameter. */
function shadows(a: MatchedRoute, b: MatchedRoute): boolean {
  if (a.segments.length !== b.segments.length) return false;
  for (let i = 0; i < a.segments.length; i++) {
    const pa = isParameter(a.segments[i]!);
    const pb = isParameter(b.segments[i]!);
    if (pa !== pb) return !pa;
  }
  return false;
}

/** The methods `path` is served with, sorted; empty when no route has this path. */
export function allowedMethods(app: Express, path: string): string[] {
  const matched: MatchedRoute[] = [];
  collect(stackOf(app), path, '', matched);
  const methods = new Set<string>();
  for (const route of matched) {
    if (matched.some((other) => shadows(other, route))) continue;
    for (const method of route.methods) methods.add(method);
  }
  return [...methods].sort();
}

function routesOf(stack: RouteLayer[], prefix: string, into: string[][]): void {
  for (const layer of stack) {
    if (layer.route && typeof layer.route.path === 'string') into.push((prefix + layer.route.path).split('/'));
    // Mounted routers are mounted at the root here (app.use(router)).
    else if (layer.handle?.stack) routesOf(layer.handle.stack, prefix, into);
  }
}

/**
 * The last segments of literal routes that a parameter route could also
 * take: only paths ending in one of these need methodGuard's look (the
 * others, negotiate among them, pass at the cost of one Set lookup).
 */
export function shadowingTails(app: Express): Set<string> {
  const routes: string[][] = [];
  routesOf(stackOf(app), '', routes);
  const tails = new Set<string>();
  for (const literal of routes) {
    const tail = literal[literal.length - 1]!;
    if (isParameter(tail)) continue;
    const collides = routes.some(
      (other) =>
        other.length === literal.length &&
        isParameter(other[other.length - 1]!) &&
        other.every((s, i) => isParameter(s) || isParameter(literal[i]!) || s === literal[i]),
    );
    if (collides) tails.add(tail.toLowerCase());
  }
  return tails;
}
