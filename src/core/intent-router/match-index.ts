/**
 * The intent router's matching index: every way an asked-for action name can
 * resemble a registered one, precomputed once per tool set and queried per
 * call. It finds candidates and scores them; which candidate runs (threshold,
 * ties, explicit tool, suggestions) is the router's policy, in
 * `../intent-router.ts`.
 *
 * Matching, strongest first (each stage's scores lie above every later
 * stage's, so the first stage that finds something holds the best match):
 * 1. exact name: 1.0;
 * 2. the same name after case / separator / camelCase normalisation: 0.95;
 * 3. a verb synonym on the first word (`fetch-resource` -> `read-resource`): 0.85;
 * 4. small typos (Damerau-Levenshtein 1-2): 0.84 at best, less for short names
 *    or two edits; and shared words (only ever a suggestion at the default threshold).
 */
import { MAX_NAME_LENGTH, compareNames, toKebabCase } from '../naming';

/** What the router needs of an action; callers pass richer objects and get them back. */
export interface RouterEntry {
  readonly tool: string;
  readonly action: string;
}

/**
 * The score each kind of match earns. The contract asks for >= 0.9 for a case/separator variant and
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

const MAX_TYPO_DISTANCE = 2;

const VERB_CANONICAL: ReadonlyMap<string, string> = new Map(
  Object.entries(VERB_SYNONYMS).flatMap(([verb, synonyms]) => [verb, ...synonyms].map((s) => [s, verb] as const)),
);

/** One distinct action name and every entry (tool) that declares it. */
export interface NameSlot<E> {
  readonly name: string;
  /** Distinct words, for the shared-words score. */
  readonly words: readonly string[];
  /** Which characters occur in the name (see charMask), to skip hopeless typo candidates cheaply. */
  readonly chars: number;
  /** Sorted by tool, so their canonical names are sorted too. */
  readonly entries: E[];
}

export interface Candidate<E> {
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
export class ActionIndex<E extends RouterEntry> {
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
      slot.entries.sort((a, b) => compareNames(a.tool, b.tool));
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
      .sort((a, b) => b.confidence - a.confidence || compareNames(a.slot.name, b.slot.name));
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
  // One object for the whole search, its row fields moved on each row (no allocation per row).
  const row: BandRow = { a, b, i: 0, lo: 0, hi: 0, twoBack: rows[0], prev: rows[1], cur: rows[2] };
  for (let j = 0; j <= b.length; j++) row.prev[j] = Math.min(j, over);
  for (let i = 1; i <= a.length; i++) {
    row.i = i;
    row.lo = Math.max(1, i - max);
    row.hi = Math.min(b.length, i + max);
    row.cur[row.lo - 1] = row.lo === 1 ? i : over;
    if (row.hi < b.length) row.cur[row.hi + 1] = over;
    if (bandRow(row) > max) return over;
    const recycled = row.twoBack;
    row.twoBack = row.prev;
    row.prev = row.cur;
    row.cur = recycled;
  }
  return Math.min(row.prev[b.length]!, over);
}

/** Row `i` of boundedDamerau's search: cells lo..hi of `cur` are filled from `prev` and `twoBack`. */
interface BandRow {
  a: string;
  b: string;
  i: number;
  lo: number;
  hi: number;
  twoBack: Int32Array;
  prev: Int32Array;
  cur: Int32Array;
}

/** Fills cells lo..hi of row i and returns their minimum. */
function bandRow(row: BandRow): number {
  const { a, b, i, lo, hi, twoBack, prev, cur } = row;
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

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
