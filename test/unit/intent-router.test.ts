import fc from 'fast-check';
import { CONFIDENCE, IntentRouter, type RouteResult, type RouterEntry } from '../../src/core/intent-router';
import { boundedDamerau, charMask, mayBeWithin, type DistanceRows } from '../../src/core/intent-router/match-index';
import { providerName, qualifiedName } from '../../src/core/naming';

/** A richer entry, as the registry passes: the router must hand back this very object. */
interface Action extends RouterEntry {
  readonly level: 1 | 2 | 3;
}

/** The bundled tool set's shape (API.md "Bundled tools"). */
const BUNDLED: Record<string, string[]> = {
  'example-tool': ['greet'],
  'data-tool': ['create-resource', 'read-resource', 'update-resource', 'list-resources', 'delete-resource'],
  'transform-tool': ['transform-resource'],
  'analytics-tool': ['summarize-resource'],
  'export-tool': ['export-resource', 'write-export'],
  calculator: ['add', 'multiply'],
  'math-service': ['add', 'integrate'],
};

function entriesOf(tools: Record<string, string[]>): Action[] {
  return Object.entries(tools).flatMap(([tool, actions]) =>
    actions.map((action) => ({ tool, action, level: 1 as const })),
  );
}

const ENTRIES = entriesOf(BUNDLED);
const router = IntentRouter.build(ENTRIES, { minConfidence: 0.8 });

function entry(tool: string, action: string): Action {
  const found = ENTRIES.find((e) => e.tool === tool && e.action === action);
  if (!found) throw new Error(`test setup: no ${tool}/${action}`);
  return found;
}

/** The routed entry's canonical name and the result's other fields, for compact assertions. */
function expectOk(result: RouteResult<Action>): { name: string; confidence: number; explicit: boolean } {
  if (result.kind !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return {
    name: qualifiedName(result.entry.tool, result.entry.action),
    confidence: result.confidence,
    explicit: result.explicit,
  };
}

describe('exact routing', () => {
  it('routes every bare action declared by one tool with confidence 1, returning the entry itself', () => {
    for (const e of ENTRIES.filter((x) => x.action !== 'add')) {
      const result = router.route(e.action);
      expect(result).toEqual({ kind: 'ok', entry: e, confidence: 1, explicit: false });
      if (result.kind === 'ok') expect(result.entry).toBe(e);
    }
  });

  it('routes every canonical and provider-safe name explicitly with confidence 1', () => {
    for (const e of ENTRIES) {
      for (const name of [qualifiedName(e.tool, e.action), providerName(e.tool, e.action)]) {
        const result = router.route(name);
        expect(result).toEqual({ kind: 'ok', entry: e, confidence: 1, explicit: true });
        if (result.kind === 'ok') expect(result.entry).toBe(e);
      }
    }
  });

  it('trims the input before matching', () => {
    expect(expectOk(router.route('  greet\n'))).toEqual({ name: 'example-tool/greet', confidence: 1, explicit: false });
    expect(expectOk(router.route(' calculator/add '))).toEqual({
      name: 'calculator/add',
      confidence: 1,
      explicit: true,
    });
  });

  it('answers exact routes with a ready-made result (the cache)', () => {
    expect(router.route('greet')).toBe(router.route('greet'));
    expect(router.route('calculator/add')).toBe(router.route('calculator_add'));
  });
});

describe('ambiguity', () => {
  it('refuses to pick between two tools declaring the bare action', () => {
    expect(router.route('add')).toEqual({ kind: 'ambiguous', candidates: ['calculator/add', 'math-service/add'] });
  });

  it('routes the qualified forms of the shared action', () => {
    expect(router.route('calculator/add')).toMatchObject({
      kind: 'ok',
      entry: entry('calculator', 'add'),
      explicit: true,
    });
    expect(router.route('math-service_add')).toMatchObject({
      kind: 'ok',
      entry: entry('math-service', 'add'),
      explicit: true,
    });
    expect(router.route('add', 'math-service')).toMatchObject({
      kind: 'ok',
      entry: entry('math-service', 'add'),
      confidence: 1,
    });
  });

  it('is ambiguous for an approximate match that two tools share at the top score', () => {
    expect(router.route('ADD')).toEqual({ kind: 'ambiguous', candidates: ['calculator/add', 'math-service/add'] });
    const users = IntentRouter.build(entriesOf({ 'user-db': ['get-user'], 'user-api': ['fetch-user'] }), {
      minConfidence: 0.8,
    });
    expect(users.route('read-user')).toEqual({
      kind: 'ambiguous',
      candidates: ['user-api/fetch-user', 'user-db/get-user'],
    });
  });

  it('suggests instead of being ambiguous when the tied candidates are below the threshold', () => {
    const strict = IntentRouter.build(ENTRIES, { minConfidence: 0.99 });
    expect(strict.route('ADD')).toEqual({
      kind: 'no_tool',
      suggestions: [
        { action: 'calculator/add', confidence: 0.95 },
        { action: 'math-service/add', confidence: 0.95 },
      ],
    });
  });
});

describe('explicit tool', () => {
  it('looks the action up within the named tool only', () => {
    expect(expectOk(router.route('greet', 'example-tool'))).toEqual({
      name: 'example-tool/greet',
      confidence: 1,
      explicit: true,
    });
    expect(expectOk(router.route('createResource', 'data-tool'))).toEqual({
      name: 'data-tool/create-resource',
      confidence: CONFIDENCE.normalised,
      explicit: true,
    });
    expect(router.route('integrate', 'calculator')).toMatchObject({ kind: 'unknown_tool', tool: 'calculator' });
  });

  it('reports an unknown tool', () => {
    expect(router.route('greet', 'nope-tool')).toEqual({
      kind: 'unknown_tool',
      tool: 'nope-tool',
      message: 'Unknown tool: nope-tool',
    });
    expect(router.route('nope-tool/greet')).toEqual({
      kind: 'unknown_tool',
      tool: 'nope-tool',
      message: 'Unknown tool: nope-tool',
    });
  });

  it('reports a tool lacking the action, even approximately', () => {
    const result = router.route('greet', 'data-tool');
    expect(result).toMatchObject({ kind: 'unknown_tool', tool: 'data-tool' });
    if (result.kind === 'unknown_tool') expect(result.message).toMatch(/^Tool data-tool has no action greet/);
    expect(router.route('data-tool/greet')).toMatchObject({ kind: 'unknown_tool', tool: 'data-tool' });
    // `add` is a synonym of create, but data-tool has no `create`: no silent jump to create-resource.
    expect(router.route('add', 'data-tool')).toMatchObject({ kind: 'unknown_tool', tool: 'data-tool' });
  });

  it('names the closest actions of the tool in the message', () => {
    const result = router.route('delete', 'data-tool');
    expect(result.kind === 'unknown_tool' && result.message).toBe(
      'Tool data-tool has no action delete; did you mean data-tool/delete-resource?',
    );
  });

  it('accepts a qualified action naming the same tool, refuses one naming another', () => {
    expect(expectOk(router.route('calculator/add', 'calculator'))).toEqual({
      name: 'calculator/add',
      confidence: 1,
      explicit: true,
    });
    expect(router.route('calculator/add', 'math-service')).toMatchObject({
      kind: 'unknown_tool',
      tool: 'math-service',
    });
    expect(router.route('calculator_add', 'math-service')).toMatchObject({
      kind: 'unknown_tool',
      tool: 'math-service',
    });
  });

  it('treats a blank tool as no tool', () => {
    expect(router.route('greet', '  ')).toMatchObject({ kind: 'ok', explicit: false });
  });

  it('matches the action part of a qualified name approximately', () => {
    expect(expectOk(router.route('data-tool/fetchResource'))).toEqual({
      name: 'data-tool/read-resource',
      confidence: CONFIDENCE.synonym,
      explicit: true,
    });
    expect(expectOk(router.route('data-tool_createResource'))).toEqual({
      name: 'data-tool/create-resource',
      confidence: CONFIDENCE.normalised,
      explicit: true,
    });
  });

  it('caps the confidence when only a normalised form names the tool', () => {
    expect(expectOk(router.route('Data-Tool/read-resource'))).toEqual({
      name: 'data-tool/read-resource',
      confidence: CONFIDENCE.normalised,
      explicit: true,
    });
    expect(expectOk(router.route('readResource', 'DataTool')).confidence).toBeLessThan(1);
  });
});

describe('approximate routing', () => {
  it.each([
    'createResource',
    'CreateResource',
    'create_resource',
    'Create Resource',
    'CREATE-RESOURCE',
    'create resource',
  ])('routes the variant %j to data-tool/create-resource at >= 0.9 and < 1', (variant) => {
    const { name, confidence, explicit } = expectOk(router.route(variant));
    expect(name).toBe('data-tool/create-resource');
    expect(confidence).toBeGreaterThanOrEqual(0.9);
    expect(confidence).toBeLessThan(1);
    expect(explicit).toBe(false);
  });

  it.each([
    ['fetch-resource', 'data-tool/read-resource'],
    ['get-resource', 'data-tool/read-resource'],
    ['getResource', 'data-tool/read-resource'],
    ['make-resource', 'data-tool/create-resource'],
    ['add-resource', 'data-tool/create-resource'],
    ['modify-resource', 'data-tool/update-resource'],
    ['remove_resource', 'data-tool/delete-resource'],
    ['hello', 'example-tool/greet'],
  ])('routes the synonym %j to %s at >= 0.8 and < 1', (variant, expected) => {
    const { name, confidence } = expectOk(router.route(variant));
    expect(name).toBe(expected);
    expect(confidence).toBeGreaterThanOrEqual(0.8);
    expect(confidence).toBeLessThan(1);
  });

  it('ranks a case variant above a synonym', () => {
    expect(expectOk(router.route('ReadResource')).confidence).toBeGreaterThan(
      expectOk(router.route('fetch-resource')).confidence,
    );
  });

  it('lets an exact match win over a synonym (`add` is a real action)', () => {
    expect(router.route('add', 'calculator')).toMatchObject({
      kind: 'ok',
      entry: entry('calculator', 'add'),
      confidence: 1,
    });
  });

  it('routes one typo in a name of 10+ characters at >= 0.8 and < the synonym score', () => {
    for (const typo of ['craete-resource', 'creat-resource', 'list-resource', 'reed-resource']) {
      const { confidence } = expectOk(router.route(typo));
      expect(confidence).toBeGreaterThanOrEqual(0.8);
      expect(confidence).toBeLessThan(CONFIDENCE.synonym);
    }
    expect(expectOk(router.route('craete-resource')).name).toBe('data-tool/create-resource');
  });

  it('does not execute one typo in a short name, or two typos', () => {
    for (const [typo, expected] of [
      ['gret', 'example-tool/greet'],
      ['multply', 'calculator/multiply'],
      ['craete-resorce', 'data-tool/create-resource'],
      // Two substitutions bringing in two characters the name lacks.
      ['crbate-resourze', 'data-tool/create-resource'],
    ] as const) {
      const result = router.route(typo);
      if (result.kind !== 'no_tool') throw new Error(`${typo}: expected no_tool, got ${result.kind}`);
      expect(result.suggestions[0]?.action).toBe(expected);
      expect(result.suggestions[0]?.confidence).toBeLessThan(0.8);
    }
  });

  it('caps two typos at twoTyposMax even in a name long enough to score above it', () => {
    // 18 characters: 1 - 2 * 2 / 18 = 0.78 uncapped. A transposition and a deletion.
    const result = router.route('sumamrize-resurce');
    if (result.kind !== 'no_tool') throw new Error(`expected no_tool, got ${result.kind}`);
    expect(result.suggestions[0]).toEqual({
      action: 'analytics-tool/summarize-resource',
      confidence: CONFIDENCE.twoTyposMax,
    });
  });
});

describe('below the threshold', () => {
  it('answers no_tool with at most 5 suggestions, best first, all above 0.3', () => {
    const result = router.route('resource');
    if (result.kind !== 'no_tool') throw new Error(`expected no_tool, got ${result.kind}`);
    expect(result.suggestions.length).toBeGreaterThan(0);
    expect(result.suggestions.length).toBeLessThanOrEqual(5);
    const confidences = result.suggestions.map((s) => s.confidence);
    expect(confidences).toEqual([...confidences].sort((a, b) => b - a));
    for (const s of result.suggestions) {
      expect(s.confidence).toBeGreaterThan(CONFIDENCE.suggestionFloor);
      expect(ENTRIES.map((e) => qualifiedName(e.tool, e.action))).toContain(s.action);
    }
  });

  it('answers no_tool without suggestions when nothing is close', () => {
    expect(router.route('launch-rockets')).toEqual({ kind: 'no_tool', suggestions: [] });
  });

  it('respects minConfidence: 0.99 turns a synonym into no_tool, still suggesting it', () => {
    const strict = IntentRouter.build(ENTRIES, { minConfidence: 0.99 });
    const result = strict.route('fetch-resource');
    expect(result.kind).toBe('no_tool');
    if (result.kind === 'no_tool') {
      expect(result.suggestions[0]).toEqual({ action: 'data-tool/read-resource', confidence: CONFIDENCE.synonym });
    }
    expect(strict.route('createResource').kind).toBe('no_tool');
    expect(strict.route('greet').kind).toBe('ok');
  });

  it('suggests from every stage once the strongest one falls short of the threshold', () => {
    const strict = IntentRouter.build(ENTRIES, { minConfidence: 0.99 });
    const result = strict.route('fetch-resource');
    // The synonym first, then the actions sharing the word `resource`.
    expect(result.kind === 'no_tool' && result.suggestions.length).toBe(5);
    const users = IntentRouter.build(entriesOf({ 'user-db': ['read-user'], 'user-api': ['get-user'] }), {
      minConfidence: 0.99,
    });
    expect(users.route('ReadUser')).toEqual({
      kind: 'no_tool',
      suggestions: [
        { action: 'user-db/read-user', confidence: CONFIDENCE.normalised },
        { action: 'user-api/get-user', confidence: CONFIDENCE.synonym },
      ],
    });
  });

  it('applies the threshold to the capped confidence of a normalised tool name', () => {
    const strict = IntentRouter.build(ENTRIES, { minConfidence: 0.99 });
    expect(strict.route('Data-Tool/read-resource')).toMatchObject({ kind: 'unknown_tool', tool: 'data-tool' });
    expect(strict.route('data-tool/read-resource').kind).toBe('ok');
  });

  it('respects minConfidence: 0.9 keeps case variants and drops synonyms', () => {
    const mid = IntentRouter.build(ENTRIES, { minConfidence: 0.9 });
    expect(mid.route('createResource').kind).toBe('ok');
    expect(mid.route('get-resource').kind).toBe('no_tool');
  });

  it('respects minConfidence: a low threshold executes weaker matches', () => {
    const lax = IntentRouter.build(ENTRIES, { minConfidence: 0.5 });
    expect(expectOk(lax.route('gret')).name).toBe('example-tool/greet');
    // Only the shared word `greet` (0.28): below the suggestion floor, yet routable at 0.2.
    const laxest = IntentRouter.build(ENTRIES, { minConfidence: 0.2 });
    expect(laxest.route('greet-a-b-c')).toMatchObject({
      kind: 'ok',
      entry: entry('example-tool', 'greet'),
      confidence: 0.28,
    });
    expect(router.route('greet-a-b-c')).toEqual({ kind: 'no_tool', suggestions: [] });
  });
});

describe('garbage input', () => {
  it.each([
    '',
    '   ',
    '/',
    '_',
    '//',
    '/add',
    'calculator/',
    'a/b/c',
    '__proto__',
    'constructor',
    'toString',
    '\u0000',
    '🙂🙂',
    'İstanbul',
    '-'.repeat(300),
    'x'.repeat(1_000_000),
  ])('never throws on %j', (input) => {
    expect(() => router.route(input)).not.toThrow();
    expect(() => router.route(input, input)).not.toThrow();
    expect(() => router.route('greet', input)).not.toThrow();
  });

  it('answers empty input with no_tool', () => {
    expect(router.route('')).toEqual({ kind: 'no_tool', suggestions: [] });
    expect(router.route(' \t ')).toEqual({ kind: 'no_tool', suggestions: [] });
    expect(router.route('', 'data-tool')).toEqual({ kind: 'no_tool', suggestions: [] });
    expect(router.route('data-tool/ ')).toEqual({ kind: 'no_tool', suggestions: [] });
  });

  it('survives untyped callers passing non-strings', () => {
    const odd: unknown[] = [undefined, null, 42, {}, ['greet']];
    for (const bad of odd) {
      expect(router.route(bad as string).kind).toBe('no_tool');
      expect(() => router.route('greet', bad as string)).not.toThrow();
    }
  });

  it('bounds what it echoes back', () => {
    const result = router.route('greet', 'x'.repeat(10_000));
    expect(result.kind).toBe('unknown_tool');
    if (result.kind === 'unknown_tool') expect(result.message.length).toBeLessThan(100);
  });

  it('returns a well-formed result for any string', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 80 }),
        fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        (action, tool) => {
          checkWellFormed(router.route(action, tool));
        },
      ),
    );
  });

  it('returns a well-formed result for near-miss names built from real ones', () => {
    const names = ENTRIES.flatMap((e) => [e.action, qualifiedName(e.tool, e.action), providerName(e.tool, e.action)]);
    const edit = fc.tuple(fc.constantFrom(...names), fc.nat(), fc.constantFrom('', 'x', '-', '_', '/', 'A'));
    fc.assert(
      fc.property(edit, ([name, at, insert]) => {
        const i = at % (name.length + 1);
        checkWellFormed(router.route(name.slice(0, i) + insert + name.slice(i + 1)));
      }),
    );
  });
});

describe('typo distance', () => {
  /** Textbook optimal-string-alignment distance, full matrix: the reference. */
  function osa(a: string, b: string): number {
    const d = Array.from({ length: a.length + 1 }, (_, i) =>
      Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
    );
    const at = (i: number, j: number): number => d[i]?.[j] ?? Number.NaN;
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
        d[i]![j] = v;
      }
    }
    return at(a.length, b.length);
  }

  /** A name and a copy with up to three random edits, over a small alphabet so near misses are common. */
  const unit = fc.constantFrom('a', 'b', 'c', '1', '-');
  const edit = fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'substitute', 'transpose'), unit);
  const pair = fc
    .tuple(fc.string({ unit, minLength: 1, maxLength: 31 }), fc.array(edit, { maxLength: 3 }))
    .map(([b, edits]) => {
      let a = b;
      for (const [n, op, c] of edits) {
        const i = n % (a.length + 1);
        if (op === 'insert') a = a.slice(0, i) + c + a.slice(i);
        else if (op === 'delete') a = a.slice(0, i) + a.slice(i + 1);
        else if (op === 'substitute') a = a.slice(0, i) + c + a.slice(i + 1);
        else a = a.slice(0, i) + a.charAt(i + 1) + a.charAt(i) + a.slice(i + 2);
      }
      return [a, b] as const;
    });
  const rows = (): DistanceRows => [new Int32Array(32), new Int32Array(32), new Int32Array(32)];

  it('agrees with the full-matrix distance up to the bound', () => {
    const shared = rows(); // reused across runs, as the router does: stale cells must not leak
    fc.assert(
      fc.property(pair, fc.constantFrom(1, 2), ([a, b], max) => {
        expect(boundedDamerau(a, b, max, shared)).toBe(Math.min(osa(a, b), max + 1));
      }),
      { numRuns: 2000 },
    );
  });

  it('never filters out a pair within the distance', () => {
    fc.assert(
      fc.property(pair, fc.constantFrom(1, 2), ([a, b], max) => {
        if (osa(a, b) <= max) expect(mayBeWithin(charMask(a), charMask(b), max)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('building', () => {
  it('refuses invalid names, duplicates and thresholds outside [0, 1]', () => {
    expect(() => IntentRouter.build([{ tool: 'Bad', action: 'x' }], { minConfidence: 0.8 })).toThrow(TypeError);
    expect(() => IntentRouter.build([{ tool: 'ok', action: 'a_b' }], { minConfidence: 0.8 })).toThrow(TypeError);
    const twice = [
      { tool: 'a', action: 'x' },
      { tool: 'a', action: 'x' },
    ];
    expect(() => IntentRouter.build(twice, { minConfidence: 0.8 })).toThrow(/Duplicate action: a\/x/);
    for (const minConfidence of [-0.1, 1.1, Number.NaN]) {
      expect(() => IntentRouter.build([], { minConfidence })).toThrow(RangeError);
    }
  });

  it('routes nothing when empty', () => {
    const empty = IntentRouter.build<RouterEntry>([], { minConfidence: 0.8 });
    expect(empty.size).toBe(0);
    expect(empty.route('greet')).toEqual({ kind: 'no_tool', suggestions: [] });
  });
});

/** Invariants every result keeps, whatever the input. */
function checkWellFormed(result: RouteResult<Action>): void {
  switch (result.kind) {
    case 'ok':
      expect(ENTRIES).toContain(result.entry);
      expect(result.confidence).toBeGreaterThanOrEqual(0.8);
      expect(result.confidence).toBeLessThanOrEqual(1);
      break;
    case 'no_tool':
      expect(result.suggestions.length).toBeLessThanOrEqual(5);
      for (const s of result.suggestions) {
        expect(s.confidence).toBeGreaterThan(CONFIDENCE.suggestionFloor);
        expect(s.confidence).toBeLessThan(0.8);
      }
      break;
    case 'ambiguous':
      expect(result.candidates.length).toBeGreaterThan(1);
      expect(result.candidates).toEqual([...result.candidates].sort());
      break;
    case 'unknown_tool':
      expect(result.message.length).toBeGreaterThan(0);
      break;
  }
}
