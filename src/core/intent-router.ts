/**
 * The intent router (seed 002, `src/core/intent-router.ts`): maps the action a
 * client or an LLM asked for to the one tool action that will run, with a
 * confidence in [0, 1] (API.md "Negotiate", Routing).
 *
 * Pure logic, no I/O. A router is built once from the registered actions and
 * is immutable; when the tool set changes the registry builds a new one, which
 * is how the exact-match cache is "rebuilt when the tool set changes".
 *
 * This file is the routing policy: exact names (canonical `tool/action` or
 * provider `tool_action`, 1.0) are answered from a precomputed map of
 * ready-made results; everything else asks the matching index
 * (`intent-router/match-index.ts`, which also explains the scores) for
 * candidates, and decides here: which tool a name or `tool` field means, the
 * minimum confidence, ties as ambiguity, suggestions on a miss.
 */
import {
  CANONICAL_SEPARATOR,
  PROVIDER_SEPARATOR,
  compareNames,
  parseQualified,
  providerName,
  qualifiedName,
  toKebabCase,
} from './naming';
import { ActionIndex, CONFIDENCE, type Candidate, type NameSlot, type RouterEntry } from './intent-router/match-index';

// Part of the router's public face: callers and tests import them from here.
export { CONFIDENCE, type RouterEntry } from './intent-router/match-index';

export interface RouterOptions {
  /** Approximate matches below this are not executed (ROUTER_MIN_CONFIDENCE). */
  readonly minConfidence: number;
}

export interface RouteSuggestion {
  /** Canonical `tool/action`. */
  readonly action: string;
  readonly confidence: number;
}

/**
 * Results are shared, frozen objects on the exact path (no allocation per
 * call), hence the readonly fields.
 */
export type RouteResult<E> =
  | { readonly kind: 'ok'; readonly entry: E; readonly confidence: number; readonly explicit: boolean }
  | { readonly kind: 'no_tool'; readonly suggestions: readonly RouteSuggestion[] }
  | { readonly kind: 'unknown_tool'; readonly tool: string; readonly message: string }
  /** Canonical names, sorted. */
  | { readonly kind: 'ambiguous'; readonly candidates: readonly string[] };

/**
 * Longer input is not a name in any form (a qualified name is at most 63
 * characters); refusing it up front bounds the work one request can cause.
 */
export const MAX_ROUTE_INPUT_LENGTH = 256;

const MAX_SUGGESTIONS = 5;
/** How much of a user-supplied string is echoed back in a message. */
const MAX_ECHO_LENGTH = 64;

const NO_MATCH: RouteResult<never> = Object.freeze({ kind: 'no_tool', suggestions: Object.freeze([]) });

export class IntentRouter<E extends RouterEntry> {
  readonly minConfidence: number;
  private readonly all: ActionIndex<E>;
  private readonly tools = new Map<string, ToolRoutes<E>>();
  /** Bare names, canonical and provider names (disjoint: only the latter two contain `/` or `_`). */
  private readonly exact = new Map<string, RouteResult<E>>();

  /** Throws on an invalid name, a duplicate tool/action pair or a minConfidence outside [0, 1]. */
  static build<E extends RouterEntry>(entries: readonly E[], options: RouterOptions): IntentRouter<E> {
    return new IntentRouter(entries, options);
  }

  constructor(entries: readonly E[], options: RouterOptions) {
    this.minConfidence = checkedThreshold(options.minConfidence);
    const byTool = groupByTool(entries);
    this.all = new ActionIndex(entries);
    for (const [tool, own] of byTool) {
      const routes: ToolRoutes<E> = { name: tool, index: new ActionIndex(own), exact: new Map() };
      for (const entry of own) this.addExplicit(routes, entry);
      this.tools.set(tool, routes);
    }
    for (const slot of this.all.slots()) this.exact.set(slot.name, bareResult(slot));
  }

  /** Number of registered actions. */
  get size(): number {
    return this.all.entryCount;
  }

  /**
   * Routes `action` (bare, canonical or provider-safe; any string, never
   * throws), within `explicitTool` only when one is named.
   */
  route(action: string, explicitTool?: string): RouteResult<E> {
    const hit = explicitTool === undefined ? this.exact.get(action) : this.tools.get(explicitTool)?.exact.get(action);
    return hit ?? this.routeSlowly(action, explicitTool);
  }

  private addExplicit(routes: ToolRoutes<E>, entry: E): void {
    const result = freezeOk(entry, CONFIDENCE.exact, true);
    routes.exact.set(entry.action, result);
    this.exact.set(qualifiedName(entry.tool, entry.action), result);
    this.exact.set(providerName(entry.tool, entry.action), result);
  }

  private routeSlowly(action: unknown, explicitTool: unknown): RouteResult<E> {
    const input = cleanInput(action);
    if (input === undefined) return NO_MATCH;
    const named = typeof explicitTool === 'string' ? explicitTool.trim() : '';
    const qualified = this.splitQualified(input);
    if (qualified === undefined && named === '') return this.exact.get(input) ?? this.routeBare(input);

    if (qualified && !qualified.scope) return unknownTool(qualified.toolText);
    const namedScope = named === '' ? undefined : this.resolveTool(named);
    if (named !== '' && !namedScope) return unknownTool(named);
    if (qualified?.scope && namedScope && qualified.scope.routes !== namedScope.routes) {
      return conflictingTools(input, named);
    }
    const scope = qualified?.scope ?? namedScope;
    const actionText = qualified ? qualified.action : input;
    return scope ? this.routeInTool(scope, actionText) : this.routeBare(actionText);
  }

  private routeBare(action: string): RouteResult<E> {
    const decision = decide(this.all.match(action, this.minConfidence), this.minConfidence, CONFIDENCE.exact);
    if (decision.kind === 'hit') return freezeOk(decision.entry, decision.confidence, false);
    if (decision.kind === 'tie') return { kind: 'ambiguous', candidates: decision.candidates };
    return { kind: 'no_tool', suggestions: decision.suggestions };
  }

  private routeInTool(scope: ToolScope<E>, rawAction: string): RouteResult<E> {
    const action = rawAction.trim();
    if (action === '') return NO_MATCH;
    const candidates = scope.routes.index.match(action, this.minConfidence);
    const decision = decide(candidates, this.minConfidence, scope.cap);
    if (decision.kind === 'hit') return freezeOk(decision.entry, decision.confidence, true);
    if (decision.kind === 'tie') return { kind: 'ambiguous', candidates: decision.candidates };
    return { kind: 'unknown_tool', tool: scope.routes.name, message: lacksAction(scope.routes.name, action, decision) };
  }

  /**
   * `tool/action` always names a tool (`/` occurs in no name). `tool_action`
   * does when the text before some `_` is a registered tool (the leftmost such
   * `_` wins), or when it is a strict provider name that does not route as
   * snake_case for a bare action (`remove_resource` is just as likely that).
   */
  private splitQualified(input: string): QualifiedInput<E> | undefined {
    const slash = input.indexOf(CANONICAL_SEPARATOR);
    if (slash >= 0) {
      const toolText = input.slice(0, slash).trim();
      return { toolText, scope: this.resolveTool(toolText), action: input.slice(slash + 1) };
    }
    for (let at = input.indexOf(PROVIDER_SEPARATOR); at > 0; at = input.indexOf(PROVIDER_SEPARATOR, at + 1)) {
      const toolText = input.slice(0, at);
      const scope = this.resolveTool(toolText);
      if (scope) return { toolText, scope, action: input.slice(at + 1) };
    }
    // A strict `tool_action` whose tool is not registered names an unknown
    // tool, unless it reads as snake_case for a bare action that routes.
    const strict = parseQualified(input);
    if (strict?.form === 'provider' && this.routeBare(input).kind === 'no_tool') {
      return { toolText: strict.tool, scope: undefined, action: strict.action };
    }
    return undefined;
  }

  /** A tool named exactly, or after normalisation (`Data-Tool`), which then caps the confidence. */
  private resolveTool(text: string): ToolScope<E> | undefined {
    const routes = this.tools.get(text);
    if (routes) return { routes, cap: CONFIDENCE.exact };
    if (text.length > MAX_ROUTE_INPUT_LENGTH) return undefined;
    const normalised = this.tools.get(toKebabCase(text));
    return normalised && { routes: normalised, cap: CONFIDENCE.normalised };
  }
}

// ---- Deciding ----------------------------------------------------------------

type Decision<E> =
  | { kind: 'hit'; entry: E; confidence: number }
  | { kind: 'tie'; candidates: readonly string[] }
  | { kind: 'miss'; suggestions: readonly RouteSuggestion[] };

/**
 * Executes the single best entry at or above the threshold. Several entries
 * at the same top score are a tie, never a silent pick. `cap` bounds the
 * confidence when the tool itself was only matched after normalisation.
 */
function decide<E extends RouterEntry>(candidates: Candidate<E>[], minConfidence: number, cap: number): Decision<E> {
  const top = candidates[0];
  if (!top || Math.min(top.confidence, cap) < minConfidence) {
    return { kind: 'miss', suggestions: suggestionsFrom(candidates, cap) };
  }
  const tied = candidates.filter((c) => c.confidence === top.confidence).flatMap((c) => c.slot.entries);
  const [only] = tied;
  if (only && tied.length === 1) return { kind: 'hit', entry: only, confidence: Math.min(top.confidence, cap) };
  return { kind: 'tie', candidates: Object.freeze(tied.map(canonicalOf).sort(compareNames)) };
}

/** Candidates at or below the suggestion floor never get this far (ActionIndex drops them). */
function suggestionsFrom<E extends RouterEntry>(candidates: Candidate<E>[], cap: number): RouteSuggestion[] {
  const suggestions: RouteSuggestion[] = [];
  for (const { slot, confidence } of candidates) {
    const capped = Math.min(confidence, cap);
    for (const entry of slot.entries) {
      if (suggestions.length === MAX_SUGGESTIONS) return suggestions;
      suggestions.push({ action: canonicalOf(entry), confidence: capped });
    }
  }
  return suggestions;
}

// ---- Small helpers -------------------------------------------------------------

interface ToolRoutes<E extends RouterEntry> {
  readonly name: string;
  readonly index: ActionIndex<E>;
  /** Ready-made explicit results by exact action name. */
  readonly exact: Map<string, RouteResult<E>>;
}

interface ToolScope<E extends RouterEntry> {
  readonly routes: ToolRoutes<E>;
  readonly cap: number;
}

interface QualifiedInput<E extends RouterEntry> {
  readonly toolText: string;
  readonly scope: ToolScope<E> | undefined;
  readonly action: string;
}

function checkedThreshold(minConfidence: number): number {
  if (!Number.isFinite(minConfidence) || minConfidence < 0 || minConfidence > 1) {
    throw new RangeError(`minConfidence must be within [0, 1], got ${String(minConfidence)}`);
  }
  return minConfidence;
}

/** Validates every entry (names, no duplicate pair) while grouping them. */
function groupByTool<E extends RouterEntry>(entries: readonly E[]): Map<string, E[]> {
  const byTool = new Map<string, E[]>();
  for (const entry of entries) {
    // qualifiedName throws on an invalid name; the registry refuses those before they get here.
    const name = qualifiedName(entry.tool, entry.action);
    const own = byTool.get(entry.tool) ?? [];
    if (own.some((e) => e.action === entry.action)) throw new TypeError(`Duplicate action: ${name}`);
    own.push(entry);
    byTool.set(entry.tool, own);
  }
  return byTool;
}

function bareResult<E extends RouterEntry>(slot: NameSlot<E>): RouteResult<E> {
  const [only] = slot.entries;
  if (only && slot.entries.length === 1) return freezeOk(only, CONFIDENCE.exact, false);
  return Object.freeze({ kind: 'ambiguous', candidates: Object.freeze(slot.entries.map(canonicalOf)) });
}

function freezeOk<E>(entry: E, confidence: number, explicit: boolean): RouteResult<E> {
  return Object.freeze({ kind: 'ok', entry, confidence, explicit });
}

function cleanInput(action: unknown): string | undefined {
  if (typeof action !== 'string') return undefined;
  const trimmed = action.trim();
  return trimmed === '' || trimmed.length > MAX_ROUTE_INPUT_LENGTH ? undefined : trimmed;
}

function unknownTool(tool: string): RouteResult<never> {
  return { kind: 'unknown_tool', tool: echo(tool), message: `Unknown tool: ${tool === '' ? '""' : echo(tool)}` };
}

function conflictingTools(action: string, tool: string): RouteResult<never> {
  const message = `Action ${echo(action)} names a different tool than the requested tool ${echo(tool)}`;
  return { kind: 'unknown_tool', tool: echo(tool), message };
}

function lacksAction<E>(tool: string, action: string, decision: Decision<E>): string {
  const base = `Tool ${tool} has no action ${echo(action)}`;
  const close = decision.kind === 'miss' ? decision.suggestions.slice(0, 3).map((s) => s.action) : [];
  return close.length === 0 ? base : `${base}; did you mean ${close.join(', ')}?`;
}

/** Echoed input is bounded: it ends up in responses and logs. */
function echo(text: string): string {
  return text.length > MAX_ECHO_LENGTH ? `${text.slice(0, MAX_ECHO_LENGTH - 1)}…` : text;
}

function canonicalOf(entry: RouterEntry): string {
  return `${entry.tool}${CANONICAL_SEPARATOR}${entry.action}`;
}
