/**
 * The pure part of GET /tools/definitions and GET /tools/prompt: ranking,
 * limit, policy, names, schemas, MCP hints and the prompt text, on tool sets
 * built by hand.
 */
import fc from 'fast-check';
import {
  argsSchema,
  buildDefinitions,
  firstSentence,
  mcpAnnotations,
  rankActions,
  selectActions,
  systemPrompt,
  words,
} from '../../src/core/llm-definitions';
import type { LoadedAction, LoadedTool, ToolSet } from '../../src/core/tool-registry';
import type { Level } from '../../src/core/tool-interface';

interface ActionSpec {
  description: string;
  level?: Level;
  schema?: Record<string, unknown>;
}

function makeSet(tools: Record<string, { description: string; actions: Record<string, ActionSpec> }>): ToolSet {
  const loaded: LoadedTool[] = Object.entries(tools)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([tool, def]) => ({
      name: tool,
      version: '1.0.0',
      description: def.description,
      source: `${tool}.ts`,
      actions: Object.entries(def.actions)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, spec]): LoadedAction => ({
          tool,
          name,
          qualifiedName: `${tool}/${name}`,
          providerName: `${tool}_${name}`,
          description: spec.description,
          level: spec.level ?? 1,
          inputSchema: spec.schema ?? { type: 'object', properties: {} },
          parseArgs: (args) => ({ ok: true, value: args as Record<string, unknown> }),
          run: async () => undefined,
        })),
    }));
  return {
    generation: 1,
    tools: loaded,
    byName: new Map(loaded.map((t) => [t.name, t])),
    actions: loaded.flatMap((t) => t.actions),
    edges: [],
  };
}

const ITEM_SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

const SET = makeSet({
  'item-store': {
    description: 'Keeps items.',
    actions: {
      'read-item': { description: 'Return the item `name`.', schema: ITEM_SCHEMA },
      'list-items': { description: 'List all items; archived ones too.' },
      'delete-item': { description: 'Remove the item `name` for good.', level: 2, schema: ITEM_SCHEMA },
      'create-item': { description: 'Store a new item.', level: 2, schema: ITEM_SCHEMA },
      'update-item': { description: 'Replace an item.', level: 2, schema: ITEM_SCHEMA },
    },
  },
  archiver: {
    description: 'Moves old things away.',
    actions: {
      'archive-item': { description: 'Moves the item `name` to cold storage.', level: 2, schema: ITEM_SCHEMA },
      'run-job': { description: 'Starts the nightly job.', level: 3 },
    },
  },
  alpha: { description: 'First adder.', actions: { add: { description: 'Add two numbers.' } } },
  beta: { description: 'Second adder.', actions: { add: { description: 'Add two numbers.' } } },
});

function ranked(query: string, set: ToolSet = SET): string[] {
  return selectActions(set, { query }).map((a) => a.qualifiedName);
}

const qualifiedOrder = SET.actions.map((a) => a.qualifiedName).sort();

describe('ranking', () => {
  it('without query words, keeps qualified-name order', () => {
    expect(ranked('')).toEqual(qualifiedOrder);
    expect(ranked('   ')).toEqual(qualifiedOrder);
    expect(ranked('the a of please')).toEqual(qualifiedOrder);
    expect(selectActions(SET).map((a) => a.qualifiedName)).toEqual(qualifiedOrder);
  });

  it('weights a match in the name over one in a description', () => {
    const set = makeSet({
      one: { description: 'First.', actions: { 'wipe-data': { description: 'Clears everything.' } } },
      two: {
        description: 'Second.',
        actions: {
          'list-data': { description: 'Lists data; use wipe-data to wipe it, or export the report.' },
          'export-report': { description: 'Writes a file.' },
        },
      },
    });
    // The leading verb, then the rest of the name, outweigh several description words.
    expect(ranked('wipe', set)).toEqual(['one/wipe-data', 'two/list-data', 'two/export-report']);
    expect(ranked('report', set)[0]).toBe('two/export-report');

    // `archive` is archiver/archive-item's verb, and only a description word of list-items.
    expect(ranked('archive')[0]).toBe('archiver/archive-item');
    // `storage` occurs only in archive-item's description; `store` is item-store's name.
    expect(ranked('store')[0]).toMatch(/^item-store\//);
  });

  it('splits words on case and separators and folds plurals', () => {
    expect(words('listItems Resources_summaries, the BOXES; class')).toEqual([
      'list',
      'item',
      'resource',
      'summary',
      'the',
      'boxe',
      'class',
    ]);
  });

  it('understands verb synonyms and plurals', () => {
    expect(ranked('get an item')[0]).toBe('item-store/read-item');
    expect(ranked('fetch item')[0]).toBe('item-store/read-item');
    expect(ranked('remove items')[0]).toBe('item-store/delete-item');
    expect(ranked('make a new item')[0]).toBe('item-store/create-item');
    expect(ranked('edit the item')[0]).toBe('item-store/update-item');
    expect(ranked('show me all items')[0]).not.toBe('archiver/run-job');
  });

  it('breaks ties by qualified name, so equal actions keep a stable order', () => {
    expect(ranked('add two numbers').slice(0, 2)).toEqual(['alpha/add', 'beta/add']);
    const scores = rankActions(SET, SET.actions, 'add two numbers');
    expect(scores[0]!.score).toBe(scores[1]!.score);
    expect(scores[0]!.score).toBeGreaterThan(scores[2]!.score);
  });

  it('breaks ties by qualified name whatever order the actions come in', () => {
    const reversed = rankActions(SET, [...SET.actions].reverse(), 'add two numbers');
    expect(reversed.slice(0, 2).map((r) => r.action.qualifiedName)).toEqual(['alpha/add', 'beta/add']);
  });

  it('matches tool/action and tool_action written in the query', () => {
    expect(ranked('archiver/run-job')[0]).toBe('archiver/run-job');
    expect(ranked('item-store_delete-item')[0]).toBe('item-store/delete-item');
  });

  it('is a permutation of the allowed actions, scores never increasing, ties in name order (property)', () => {
    const vocabulary = [...new Set(SET.actions.flatMap((a) => words(`${a.qualifiedName} ${a.description}`)))];
    const query = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc
        .array(fc.constantFrom(...vocabulary, 'get', 'remove', 'make', 'xyz'), { maxLength: 6 })
        .map((w) => w.join(' ')),
    );
    fc.assert(
      fc.property(query, (q) => {
        const result = rankActions(SET, SET.actions, q);
        expect(result.map((r) => r.action.qualifiedName).sort()).toEqual(qualifiedOrder);
        for (let i = 1; i < result.length; i++) {
          const [prev, cur] = [result[i - 1]!, result[i]!];
          expect(prev.score).toBeGreaterThanOrEqual(cur.score);
          if (prev.score === cur.score) expect(prev.action.qualifiedName < cur.action.qualifiedName).toBe(true);
        }
      }),
    );
  });

  it('limit keeps the first N of the unlimited order (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.integer({ min: 1, max: 128 }), (q, limit) => {
        const all = selectActions(SET, { query: q });
        expect(selectActions(SET, { query: q, limit })).toEqual(all.slice(0, limit));
      }),
    );
  });

  it('bounds the work of a huge query', () => {
    const q = 'item '.repeat(100_000);
    expect(ranked(q)[0]).toMatch(/item/);
  });
});

describe('policy', () => {
  it('leaves out denied actions before ranking and limit', () => {
    const policy = { deny: ['item-store/*', '*/add'] };
    expect(selectActions(SET, { policy }).map((a) => a.qualifiedName)).toEqual([
      'archiver/archive-item',
      'archiver/run-job',
    ]);
    expect(selectActions(SET, { policy, query: 'read item', limit: 1 }).map((a) => a.qualifiedName)).toEqual([
      'archiver/archive-item',
    ]);
  });
});

describe('definitions', () => {
  const PROVIDER = /^[a-zA-Z0-9_-]{1,64}$/;

  it('provider names fit 64 characters with 31-character tool and action names', () => {
    const long = makeSet({
      [`a${'b'.repeat(30)}`]: { description: 'Long.', actions: { [`c${'d'.repeat(30)}`]: { description: 'Long.' } } },
    });
    for (const format of ['openai', 'anthropic', 'mcp'] as const) {
      const defs = buildDefinitions(long, format);
      const name = 'function' in defs.tools[0]! ? defs.tools[0].function.name : defs.tools[0]!.name;
      expect(name).toMatch(PROVIDER);
      expect(name).toHaveLength(63);
    }
  });

  it('names the owner and, for a shared action, the other owners in the same name form', () => {
    const canonical = buildDefinitions(SET, 'canonical').tools.map((t) => t.function);
    const alphaAdd = canonical.find((f) => f.name === 'alpha/add')!;
    expect(alphaAdd.description).toMatch(/^\[alpha\] Add two numbers\./);
    expect(alphaAdd.description).toContain('also offered by beta (beta/add)');
    expect(alphaAdd.description).toContain('First adder.');
    const openai = buildDefinitions(SET, 'openai').tools.map((t) => t.function);
    expect(openai.find((f) => f.name === 'beta_add')!.description).toContain('also offered by alpha (alpha_add)');
    const runJob = openai.find((f) => f.name === 'archiver_run-job')!;
    expect(runJob.description).toBe(
      '[archiver] Starts the nightly job. Needs execute permission (level 3) for archiver in the conversation.',
    );
  });

  it('keeps descriptions within 1024 characters', () => {
    const verbose = makeSet({ big: { description: 'Big.', actions: { talk: { description: 'word '.repeat(500) } } } });
    const [def] = buildDefinitions(verbose, 'anthropic').tools;
    expect(def!.description.length).toBeLessThanOrEqual(1024);
    expect(def!.description.endsWith('…')).toBe(true);
  });

  it('publishes object schemas without $schema, adding properties when absent', () => {
    const base = SET.actions[0]!;
    expect(argsSchema({ ...base, inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema' } })).toEqual({
      type: 'object',
      properties: {},
    });
    expect(argsSchema({ ...base, inputSchema: ITEM_SCHEMA })).toEqual(ITEM_SCHEMA);
    // The registry's own object is never changed.
    const schema = { $schema: 'x', type: 'object' };
    argsSchema({ ...base, inputSchema: schema });
    expect(schema).toEqual({ $schema: 'x', type: 'object' });
  });

  it.each([
    ['read-item', 1, { readOnlyHint: true, destructiveHint: false, idempotentHint: true }],
    ['list-items', 1, { readOnlyHint: true, destructiveHint: false, idempotentHint: true }],
    ['create-item', 2, { readOnlyHint: false, destructiveHint: false, idempotentHint: false }],
    ['add', 2, { readOnlyHint: false, destructiveHint: false, idempotentHint: false }],
    ['update-item', 2, { readOnlyHint: false, destructiveHint: true, idempotentHint: true }],
    ['delete-item', 2, { readOnlyHint: false, destructiveHint: true, idempotentHint: true }],
    ['remove-item', 2, { readOnlyHint: false, destructiveHint: true, idempotentHint: true }],
    ['transform-item', 2, { readOnlyHint: false, destructiveHint: true, idempotentHint: false }],
    ['run-job', 3, { readOnlyHint: false, destructiveHint: true, idempotentHint: false }],
    ['create-report', 3, { readOnlyHint: false, destructiveHint: true, idempotentHint: false }],
    ['delete-everything', 3, { readOnlyHint: false, destructiveHint: true, idempotentHint: false }],
  ] as const)('mcp hints of %s (level %d)', (name, level, hints) => {
    expect(mcpAnnotations({ name, level })).toEqual(hints);
  });
});

describe('systemPrompt', () => {
  it('lists participants, their tools with levels, the duplicates and the rules', () => {
    const text = systemPrompt(SET);
    expect(text).toContain(
      "- archiver: Moves old things away.\n  - 'archiver/archive-item' - Moves the item `name` to cold storage. (write, level 2)",
    );
    expect(text).toContain("  - 'archiver/run-job' - Starts the nightly job. (execute, level 3)");
    expect(text).toContain("- add: 'alpha/add', 'beta/add'");
    expect(text).toContain("Always use the full 'participant/tool' name when calling tools.");
    expect(text).toContain('upgrade:PARTICIPANT:level-N (for example upgrade:archiver:level-2)');
  });

  it('says when no tool is shared, and leaves denied tools and empty participants out', () => {
    const text = systemPrompt(SET, { policy: { deny: ['beta/*', 'item-store/*'] } });
    expect(text).toContain('No tool is currently offered by more than one participant.');
    expect(text).not.toContain('beta');
    expect(text).not.toContain('item-store');
    expect(text).toContain('withholds 6 more tool(s)');
  });

  it('gives current levels and flags tools that need an upgrade', () => {
    const text = systemPrompt(SET, { levels: { archiver: 2, alpha: 1 } });
    expect(text).toContain('- archiver (current level in this conversation: write, level 2): Moves old things away.');
    expect(text).toContain("'archiver/run-job' - Starts the nightly job. (execute, level 3; needs an upgrade first)");
    expect(text).toContain("'archiver/archive-item' - Moves the item `name` to cold storage. (write, level 2)\n");
  });

  it.each([
    ['Add two numbers: returns { result: a + b }.', 'Add two numbers: returns { result: a + b }.'],
    ['Read it. Then more.', 'Read it.'],
    ['Read resource `name`. uppercase/lowercase: strings', 'Read resource `name`.'],
    ['Integral of c0 + c1*x + ... (ascending) from a to b.', 'Integral of c0 + c1*x + ... (ascending) from a to b.'],
    ['No full stop\nat the end', 'No full stop at the end.'],
  ])('firstSentence(%j) is %j', (input, expected) => {
    expect(firstSentence(input)).toBe(expected);
  });
});
