/**
 * Relevance ranking for the `query` of GET /tools/definitions: a small
 * bag-of-words score, enough to put the obviously relevant actions of a
 * registry of tens to hundreds first for a "too many tools" host. Each query
 * word scores the best field it occurs in (weights below: the action's own
 * name counts most, its leading verb most of all, then the tool's name, the
 * argument names and the description, then the tool's description), plus a
 * fifth of what it scores in the other fields. A word found only through a
 * verb synonym (`fetch` for `read`, `add` for `create`, the intent router's
 * table) or as a shared stem (`summary` / `summarize`) counts for less than
 * the word itself. Ties keep qualified-name order, so the result is stable.
 */
import { compareNames } from '../naming';
import { VERB_SYNONYMS } from '../intent-router/match-index';
import type { LoadedAction, LoadedTool, ToolSet } from '../tool-registry';

/** How much a query word is worth where it is found. */
export const FIELD_WEIGHTS = {
  verb: 5,
  name: 4,
  tool: 2.5,
  args: 1.5,
  description: 1.5,
  toolDescription: 0.75,
} as const;
type Field = keyof typeof FIELD_WEIGHTS;
const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];

/** How well a field word matches a query word. */
const MATCH_WEIGHTS = { exact: 1, synonym: 0.6, stem: 0.5 } as const;
/** Other fields a query word is found in add this share of their score. */
const OTHER_FIELDS_SHARE = 0.2;
/** Bounds the work of one request: longer queries are cut. */
const MAX_QUERY_WORDS = 32;
const MAX_QUERY_CHARS = 1000;
/** Shared stems shorter than this are coincidences (`re-`, `con-`). */
const MIN_STEM = 5;

/** Words that say nothing about which action is meant. `tool` is in every other tool's name. */
const STOP_WORDS = new Set(
  (
    'a an the and or of to for in on at by with from into onto about is are be been it its this that these those ' +
    'my me i you we our your us please can could would should will shall may might must do does did how what which ' +
    'who whom when where why want need needs using use via as then than some any all each so if not no ' +
    'tool tools action actions function call'
  ).split(' '),
);

/** Lowercase words of letters and digits; camelCase splits; plurals fold to the singular. */
export function words(text: string): string[] {
  return text
    .slice(0, MAX_QUERY_CHARS)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '')
    .map(singular);
}

function singular(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

function queryWords(query: string | undefined): string[] {
  if (query === undefined) return [];
  return [...new Set(words(query).filter((w) => !STOP_WORDS.has(w)))].slice(0, MAX_QUERY_WORDS);
}

export function hasQueryWords(query: string | undefined): query is string {
  return queryWords(query).length > 0;
}

/**
 * Words that stand for one another in a query: the intent router's verb
 * synonyms (`get` ~ `read` ~ `fetch`, `add` ~ `create`) plus a few everyday
 * words for the bundled tools' verbs, which only ranking uses (routing a
 * bare `sum` to `add` would be a guess; ranking it near `add` is a hint).
 */
const RANKING_SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  ...VERB_SYNONYMS,
  add: ['sum', 'plus', 'addition'],
  multiply: ['time', 'product'],
  count: ['many', 'total', 'tally'],
  summarize: ['summary', 'statistic', 'stat', 'describe', 'analyze', 'analyse'],
  export: ['download', 'dump'],
  integrate: ['integral'],
};

const SYNONYMS: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const related = new Map<string, Set<string>>();
  for (const [verb, synonyms] of Object.entries(RANKING_SYNONYMS)) {
    const group = [verb, ...synonyms].map(singular);
    for (const w of group) {
      const set = related.get(w) ?? new Set<string>();
      for (const other of group) if (other !== w) set.add(other);
      related.set(w, set);
    }
  }
  return related;
})();

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** How well `candidate` (a word of a field) matches query word `q`, 0 when not at all. */
function matchWeight(q: string, candidate: string): number {
  if (q === candidate) return MATCH_WEIGHTS.exact;
  if (SYNONYMS.get(q)?.has(candidate)) return MATCH_WEIGHTS.synonym;
  const shared = commonPrefixLength(q, candidate);
  if (shared >= MIN_STEM || (shared >= 4 && shared === Math.min(q.length, candidate.length))) {
    return MATCH_WEIGHTS.stem;
  }
  return 0;
}

type ActionIndexEntry = Record<Field, ReadonlySet<string>>;

function schemaWords(schema: Record<string, unknown>): { names: string[]; text: string[] } {
  const names: string[] = [];
  const text: string[] = [];
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null) return { names, text };
  for (const [key, value] of Object.entries(properties as Record<string, unknown>)) {
    names.push(...words(key));
    if (typeof value !== 'object' || value === null) continue;
    const prop = value as { description?: unknown; enum?: unknown };
    if (typeof prop.description === 'string') text.push(...words(prop.description));
    // Enum values are what a caller asks for by name: `csv`, `uppercase`.
    if (Array.isArray(prop.enum)) names.push(...prop.enum.filter((v) => typeof v === 'string').flatMap(words));
  }
  return { names, text };
}

function indexAction(action: LoadedAction, tool: LoadedTool | undefined): ActionIndexEntry {
  const [verb = '', ...rest] = words(action.name);
  const schema = schemaWords(action.inputSchema);
  return {
    verb: new Set([verb]),
    name: new Set(rest),
    tool: new Set(words(action.tool)),
    args: new Set(schema.names),
    description: new Set([...words(action.description), ...schema.text]),
    toolDescription: new Set(words(tool?.description ?? '')),
  };
}

/** Built once per tool set (sets are immutable; a reload makes a new one). */
const indexes = new WeakMap<ToolSet, Map<LoadedAction, ActionIndexEntry>>();

function indexOf(set: ToolSet): Map<LoadedAction, ActionIndexEntry> {
  let index = indexes.get(set);
  if (!index) {
    index = new Map(set.actions.map((a) => [a, indexAction(a, set.byName.get(a.tool))] as const));
    indexes.set(set, index);
  }
  return index;
}

function bestIn(q: string, fieldWords: ReadonlySet<string>): number {
  if (fieldWords.has(q)) return MATCH_WEIGHTS.exact;
  let best = 0;
  for (const w of fieldWords) best = Math.max(best, matchWeight(q, w));
  return best;
}

function scoreEntry(entry: ActionIndexEntry, query: readonly string[]): number {
  let total = 0;
  for (const q of query) {
    const scores = FIELDS.map((f) => FIELD_WEIGHTS[f] * bestIn(q, entry[f]));
    const best = Math.max(...scores);
    const rest = scores.reduce((sum, s) => sum + s, 0) - best;
    total += best + OTHER_FIELDS_SHARE * rest;
  }
  return Math.round(total * 1000) / 1000;
}

export interface RankedAction {
  action: LoadedAction;
  score: number;
}

/**
 * `actions` (of `set`) by relevance to `query`, most relevant first; equal
 * scores in qualified-name order. Actions that match nothing stay, last.
 */
export function rankActions(set: ToolSet, actions: readonly LoadedAction[], query: string): RankedAction[] {
  const q = queryWords(query);
  const index = indexOf(set);
  return actions
    .map((action) => {
      const entry = index.get(action) ?? indexAction(action, set.byName.get(action.tool));
      return { action, score: q.length === 0 ? 0 : scoreEntry(entry, q) };
    })
    .sort((a, b) => b.score - a.score || compareNames(a.action.qualifiedName, b.action.qualifiedName));
}
