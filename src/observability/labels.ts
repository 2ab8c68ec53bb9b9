/**
 * The bounded names metrics and spans use for a negotiation and a request.
 * Nothing a caller sends reaches a label unchecked: a tool and action come
 * from the routing (the loaded tool set), special actions and unroutable
 * calls get fixed names, outcomes are the domain's closed set of codes.
 */
import type { NegotiateRequest, NegotiationResult } from '../core/negotiation';
import { AppError, isUnavailable } from '../core/errors';
import { parseSpecialAction } from '../core/special-actions';

/** `_` never occurs in a kebab-case tool name (API.md, Names), so these never collide with a tool's. */
export const GATEWAY_TOOL = '_gateway';
/** Tool and action of a call that reached no tool: no_tool, unknown_tool, ambiguous, or refused before routing. */
export const UNROUTED = '_unrouted';

export interface ToolLabels {
  tool: string;
  action: string;
}

const UNROUTED_LABELS: ToolLabels = { tool: UNROUTED, action: UNROUTED };
const LIST_TOOLS_LABELS: ToolLabels = { tool: GATEWAY_TOOL, action: 'list-tools' };
const UPGRADE_LABELS: ToolLabels = { tool: GATEWAY_TOOL, action: 'upgrade' };

/** The tool and action a negotiation ran (or was decided for), as bounded names. */
export function toolLabels(req: NegotiateRequest, result: NegotiationResult | undefined): ToolLabels {
  // The routing names a loaded tool's action: bounded by the tool set.
  if (result?.routing) return result.routing;
  const special = typeof req.action === 'string' ? parseSpecialAction(req.action) : undefined;
  if (special) return special.kind === 'list-tools' ? LIST_TOOLS_LABELS : UPGRADE_LABELS;
  return UNROUTED_LABELS;
}

/** `ok`, or the result's code (one of NEGOTIATION_CODES). */
export function resultOutcome(result: NegotiationResult): string {
  return result.success ? 'ok' : (result.code ?? 'error');
}

/** What a negotiation that threw ended as: the domain error's code (not_found…), `unavailable`, else `internal`. */
export function errorOutcome(err: unknown): string {
  if (err instanceof AppError) return err.code;
  return isUnavailable(err) ? 'unavailable' : 'internal';
}

/** The route label of requests no route answered (unknown paths, and those refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched';

const templates = new Map<string, string>();

/** express's `/conversations/:conversationId/negotiate` as OpenAPI's `/conversations/{conversationId}/negotiate`. */
function template(path: string): string {
  let t = templates.get(path);
  if (t === undefined) {
    t = path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    templates.set(path, t); // one entry per registered route: bounded
  }
  return t;
}

interface RoutedRequest {
  route?: { path?: unknown };
  baseUrl?: string;
}

/**
 * The template of the route that answered `req` (never its raw path), `/docs`
 * for Swagger UI's files, else UNMATCHED_ROUTE. Routers are mounted without a
 * path prefix (src/app.ts), so `route.path` is the whole template.
 */
export function routeOf(req: RoutedRequest): string {
  const path = req.route?.path;
  if (typeof path === 'string' && !req.baseUrl) return template(path);
  // Swagger UI is mounted at the literal /docs (no parameter in it).
  if (req.baseUrl === '/docs') return '/docs';
  return UNMATCHED_ROUTE;
}
