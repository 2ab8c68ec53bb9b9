/**
 * The intent router (seed 002, `src/core/intent-router.ts`): maps the action a
 * client or an LLM asked for to the one tool action that will run, with a
 * confidence in [0, 1] (API.md "Negotiate", Routing).
 *
 * Pure logic, no I/O. A router is built once from the registered actions and
 * is immutable; when the tool set changes the registry builds a new one, which
 * is how the exact-match cache is "rebuilt when the tool set changes".
 *
 * Matching, strongest first (each stage's scores lie above every later
 * stage's, so the first stage that finds something holds the best match):
 * 1. exact name, canonical `tool/action` or provider `tool_action`: 1.0,
 *    answered from a precomputed map of ready-made results;
 * 2. the same name after case / separator / camelCase normalisation: 0.95;
 * 3. a verb synonym on the first word (`fetch-resource` -> `read-resource`): 0.85;
 * 4. small typos (Damerau-Levenshtein 1-2): 0.84 at best, less for short names
 *    or two edits; and shared words (only ever a suggestion at the default threshold).
 */
import {
  CANONICAL_SEPARATOR,
  MAX_NAME_LENGTH,
  PROVIDER_SEPARATOR,
  parseQualified,
  providerName,
  qualifiedName,
  toKebabCase,
} from './naming';

/** What the router needs of an action; callers pass richer objects and get them back. */
export interface RouterEntry {
  readonly tool: string;
  readonly action: string;
}

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
 * The scores. The contract asks for >= 0.9 for a case/separator variant and
 * >= 0.8 for a verb synonym, both < 1. Typos are capped below the synonym
 * score so the stages never interleave, and one typo in a name of 10+
 * characters reaches 0.8 (1 - 2/10) while shorter names and two typos stay
 * below it: a short name has too few characters for one edit to be a safe guess.
 */
export const CONFIDENCE = {
  exact: 1,
  normalised: 0.95,
  synonym: 0.85,
  oneTypoMax: 0.84,
  twoTyposMax: 0.75,
  /** Shared words score this times the Dice coefficient, so at most 0.7. */
  sharedWordsWeight: 0.7,
  /** Suggestions at or below this are noise. */
  suggestionFloor: 0.3,
} as const;

/** Synonyms of a leading verb, by the verb the bundled tools use. */
export const VERB_SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  read: ['get', 'fetch', 'load', 'retrieve', 'show', 'view'],
  create: ['make', 'add', 'new', 'insert'],
  update: ['edit', 'modify', 'change', 'patch'],
  delete: ['remove', 'destroy', 'erase', 'del', 'rm'],
  search: ['find', 'lookup'],
  list: ['enumerate', 'ls'],
  greet: ['hello', 'welcome', 'hi'],
  write: ['save', 'store'],
  summarize: ['summarise'],
  transform: ['convert'],
};

/**
 * Longer input is not a name in any form (a qualified name is at most 63
 * characters); refusing it up front bounds the work one request can cause.
 */
export const MAX_ROUTE_INPUT_LENGTH = 256;

const MAX_SUGGESTIONS = 5;
const MAX_TYPO_DISTANCE = 2;
/** How much of a user-supplied string is echoed back in a message. */
const MAX_ECHO_LENGTH = 64;

const VERB_CANONICAL: ReadonlyMap<string, string> = new Map(
  Object.entries(VERB_SYNONYMS).flatMap(([verb, synonyms]) => [verb, ...synonyms].map((s) => [s, verb] as const)),
);

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

// ---- The per-name index ----------------------------------------------------

/** One distinct action name and every entry (tool) that declares it. */
interface NameSlot<E> {
  readonly name: string;
  /** Distinct words, for the shared-words score. */
  readonly words: readonly string[];
  /** Which characters occur in the name (see charMask), to skip hopeless typo candidates cheaply. */
  readonly chars: number;
  /** Sorted by tool, so their canonical names are sorted too. */
  readonly entries: E[];
}

interface Candidate<E> {
  readonly slot: NameSlot<E>;
  readonly confidence: number;
}

/** Rows reused across distance computations, so a typo scan allocates nothing per name. */
export type DistanceRows = [Int32Array, Int32Array, Int32Array];

/**
 * Everything approximate matching needs, precomputed: the names, the names
 * under their canonical verb, the names by length (a typo changes the length
 * by at most 2) and by word.
 */
class ActionIndex<E extends RouterEntry> {
  readonly entryCount: number;
  private readonly byName = new Map<string, NameSlot<E>>();
  private readonly bySynonymKey = new Map<string, NameSlot<E>[]>();
  private readonly byLength = new Map<number, NameSlot<E>[]>();
  private readonly byWord = new Map<string, NameSlot<E>[]>();
  private readonly rows: DistanceRows = [0, 1, 2].map(() => new Int32Array(MAX_NAME_LENGTH + 1)) as DistanceRows;

  constructor(entries: readonly E[]) {
    this.entryCount = entries.length;
    for (const entry of entries) this.slotFor(entry.action).entries.push(entry);
    for (const slot of this.byName.values()) {
      slot.entries.sort((a, b) => compareStrings(a.tool, b.tool));
      push(this.bySynonymKey, synonymKey(slot.name), slot);
      push(this.byLength, slot.name.length, slot);
      for (const word of slot.words) push(this.byWord, word, slot);
    }
  }

  slots(): IterableIterator<NameSlot<E>> {
    return this.byName.values();
  }

  /**
   * Candidates, best first. When the strongest stage alone reaches the
   * threshold it decides the route and the costlier stages are skipped;
   * otherwise every stage contributes (the caller needs suggestions).
   */
  match(raw: string, minConfidence: number): Candidate<E>[] {
    const kebab = toKebabCase(raw);
    const strongest = this.strongest(raw, kebab);
    const top = strongest[0];
    if (top && top.confidence >= minConfidence) return strongest;
    return this.everything(kebab, minConfidence);
  }

  private strongest(raw: string, kebab: string): Candidate<E>[] {
    const exact = this.byName.get(raw);
    if (exact) return [{ slot: exact, confidence: CONFIDENCE.exact }];
    const normalised = this.byName.get(kebab);
    if (normalised) return [{ slot: normalised, confidence: CONFIDENCE.normalised }];
    const synonyms = this.bySynonymKey.get(synonymKey(kebab)) ?? [];
    return synonyms.map((slot) => ({ slot, confidence: CONFIDENCE.synonym }));
  }

  private everything(kebab: string, minConfidence: number): Candidate<E>[] {
    const best = new Map<NameSlot<E>, number>();
    const offer = (slot: NameSlot<E>, confidence: number): void => {
      // Neither routable nor worth suggesting: dropped now rather than sorted later.
      const useful = confidence > CONFIDENCE.suggestionFloor || confidence >= minConfidence;
      if (useful && confidence > (best.get(slot) ?? 0)) best.set(slot, confidence);
    };
    // Unlike `strongest`, every stage runs: a synonym is worth suggesting next to a case variant.
    // (No exact stage: an exact match, 1.0, always meets the threshold and never gets here.)
    const normalised = this.byName.get(kebab);
    if (normalised) offer(normalised, CONFIDENCE.normalised);
    for (const slot of this.bySynonymKey.get(synonymKey(kebab)) ?? []) offer(slot, CONFIDENCE.synonym);
    this.offerTypos(kebab, offer);
    this.offerSharedWords(kebab, offer);
    return [...best]
      .map(([slot, confidence]) => ({ slot, confidence }))
      .sort((a, b) => b.confidence - a.confidence || compareStrings(a.slot.name, b.slot.name));
  }

  private offerTypos(kebab: string, offer: (slot: NameSlot<E>, confidence: number) => void): void {
    if (kebab.length === 0 || kebab.length > MAX_NAME_LENGTH + MAX_TYPO_DISTANCE) return;
    const chars = charMask(kebab);
    for (let length = kebab.length - MAX_TYPO_DISTANCE; length <= kebab.length + MAX_TYPO_DISTANCE; length++) {
      for (const slot of this.byLength.get(length) ?? []) {
        if (!mayBeWithin(chars, slot.chars, MAX_TYPO_DISTANCE)) continue;
        const distance = boundedDamerau(kebab, slot.name, MAX_TYPO_DISTANCE, this.rows);
        if (distance > 0 && distance <= MAX_TYPO_DISTANCE) offer(slot, typoConfidence(distance, slot.name.length));
      }
    }
  }

  private offerSharedWords(kebab: string, offer: (slot: NameSlot<E>, confidence: number) => void): void {
    const words = distinctWords(kebab);
    const shared = new Map<NameSlot<E>, number>();
    for (const word of words) {
      for (const slot of this.byWord.get(word) ?? []) shared.set(slot, (shared.get(slot) ?? 0) + 1);
    }
    for (const [slot, count] of shared) {
      const dice = (2 * count) / (words.length + slot.words.length);
      offer(slot, round2(CONFIDENCE.sharedWordsWeight * dice));
    }
  }

  private slotFor(name: string): NameSlot<E> {
    let slot = this.byName.get(name);
    if (!slot) {
      slot = { name, words: distinctWords(name), chars: charMask(name), entries: [] };
      this.byName.set(name, slot);
    }
    return slot;
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
  return { kind: 'tie', candidates: Object.freeze(tied.map(canonicalOf).sort(compareStrings)) };
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

// ---- Scoring helpers -----------------------------------------------------------

/** The name with its leading verb replaced by the verb its synonym group is known by. */
function synonymKey(kebab: string): string {
  const dash = kebab.indexOf('-');
  const verb = dash < 0 ? kebab : kebab.slice(0, dash);
  const canonical = VERB_CANONICAL.get(verb);
  return canonical === undefined ? kebab : canonical + kebab.slice(verb.length);
}

/** See CONFIDENCE: scaled by the registered name's length, capped per distance. */
function typoConfidence(distance: number, nameLength: number): number {
  const cap = distance === 1 ? CONFIDENCE.oneTypoMax : CONFIDENCE.twoTyposMax;
  return round2(Math.max(0, Math.min(cap, 1 - (2 * distance) / nameLength)));
}

/**
 * Optimal-string-alignment distance (Damerau-Levenshtein with adjacent
 * transpositions), or `max + 1` as soon as it must exceed `max`. Only the
 * diagonal band |i - j| <= max can hold values <= max, so each row computes
 * 2 * max + 1 cells with a `max + 1` sentinel on either side; and the minimum
 * of a row never decreases, so a row entirely above `max` ends the search.
 * Each row must hold b.length + 1 cells. Exported for its property test.
 */
export function boundedDamerau(a: string, b: string, max: number, rows: DistanceRows): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const over = max + 1;
  let twoBack = rows[0];
  let prev = rows[1];
  let cur = rows[2];
  for (let j = 0; j <= b.length; j++) prev[j] = Math.min(j, over);
  for (let i = 1; i <= a.length; i++) {
    const lo = Math.max(1, i - max);
    const hi = Math.min(b.length, i + max);
    cur[lo - 1] = lo === 1 ? i : over;
    if (hi < b.length) cur[hi + 1] = over;
    if (bandRow(a, b, i, lo, hi, twoBack, prev, cur) > max) return over;
    const recycled = twoBack;
    twoBack = prev;
    prev = cur;
    cur = recycled;
  }
  return Math.min(prev[b.length]!, over);
}

/** Fills cells lo..hi of row i and returns their minimum. */
function bandRow(
  a: string,
  b: string,
  i: number,
  lo: number,
  hi: number,
  twoBack: Int32Array,
  prev: Int32Array,
  cur: Int32Array,
): number {
  const ai = a.charCodeAt(i - 1);
  let rowMin = Number.MAX_SAFE_INTEGER;
  for (let j = lo; j <= hi; j++) {
    const bj = b.charCodeAt(j - 1);
    let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ai === bj ? 0 : 1));
    if (i > 1 && j > 1 && ai === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bj) {
      d = Math.min(d, twoBack[j - 2]! + 1);
    }
    cur[j] = d;
    if (d < rowMin) rowMin = d;
  }
  return rowMin;
}

/**
 * A 32-bit set of the characters in a kebab-case string: a-z one bit each,
 * the ten digits folded onto five bits, `-` the last. Folding only weakens
 * the filter below, never makes it wrong.
 */
export function charMask(kebab: string): number {
  let mask = 0;
  for (let i = 0; i < kebab.length; i++) {
    const c = kebab.charCodeAt(i);
    const bit = c >= 97 && c <= 122 ? c - 97 : c >= 48 && c <= 57 ? 26 + ((c - 48) % 5) : 31;
    mask |= 1 << bit;
  }
  return mask;
}

/**
 * A necessary condition for an edit distance <= max: each insertion or
 * substitution brings in at most one character the other string lacks, each
 * deletion or substitution drops at most one, and a transposition neither.
 * Exported, with charMask, for its property test.
 */
export function mayBeWithin(a: number, b: number, max: number): boolean {
  return bitCount(a & ~b) <= max && bitCount(b & ~a) <= max;
}

function bitCount(x: number): number {
  let n = 0;
  for (let v = x; v !== 0; v &= v - 1) n++;
  return n;
}

function distinctWords(kebab: string): string[] {
  return kebab === '' ? [] : [...new Set(kebab.split('-'))];
}

/** Two decimals: the score reported is exactly the score compared with the threshold. */
function round2(x: number): number {
  return Math.round(x * 100) / 100;
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

/** Code-unit order, independent of the locale (names are ASCII). */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
