import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolError, type Resource, type SharedContext, type ToolContext } from '../../src/core/tool-interface';
import { ToolRegistry, type LoadedAction } from '../../src/core/tool-registry';
import { numericStats, summarize } from '../../tools/analytics-tool';
import { csvField, exportPathSegments, toCsv } from '../../tools/export-tool';
import { integratePolynomial } from '../../tools/math-service';
import { applyTransform, fieldOf } from '../../tools/transform-tool';

/** Asserts that `fn` throws a ToolError with `code` (and a message matching `message`). */
function expectToolError(fn: () => unknown, code: string, message?: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ToolError);
  expect(thrown).toMatchObject({ code });
  if (message) expect((thrown as ToolError).message).toMatch(message);
}

describe('transform-tool operations', () => {
  it('changes the case of strings and arrays of strings', () => {
    expect(applyTransform('uppercase', 'abc')).toBe('ABC');
    expect(applyTransform('lowercase', ['A', 'bC'])).toEqual(['a', 'bc']);
    expect(applyTransform('trim', [' a ', 'b\n'])).toEqual(['a', 'b']);
    expectToolError(() => applyTransform('uppercase', ['a', 1]), 'invalid_args', /uppercase.*array of strings/);
    expectToolError(() => applyTransform('lowercase', { a: 'B' }), 'invalid_args');
  });

  it('sorts numbers, strings and objects by a key, stably', () => {
    expect(applyTransform('sort', [3, 10, 1])).toEqual([1, 3, 10]); // numerically, not as text
    expect(applyTransform('sort', ['b', 'a', 'C'])).toEqual(['C', 'a', 'b']);
    const rows = [
      { n: 'x', v: 2 },
      { n: 'y', v: 1 },
      { n: 'z', v: 2 },
    ];
    expect(applyTransform('sort', rows, { by: 'v' })).toEqual([rows[1], rows[0], rows[2]]);
    expectToolError(() => applyTransform('sort', { a: 1 }), 'invalid_args', /"sort" needs an array/);
    expectToolError(() => applyTransform('sort', [1, 'a']), 'invalid_args', /all numbers or all strings/);
    expectToolError(() => applyTransform('sort', [{ v: 1 }, {}], { by: 'v' }), 'invalid_args');
  });

  it('reverses, deduplicates, sums and flattens', () => {
    expect(applyTransform('reverse', [1, 2, 3])).toEqual([3, 2, 1]);
    expect(applyTransform('reverse', 'a😀b')).toBe('b😀a');
    expect(applyTransform('unique', [1, 1, { a: 1, b: 2 }, { b: 2, a: 1 }, '1'])).toEqual([1, { a: 1, b: 2 }, '1']);
    expect(applyTransform('sum', [1, 2, 3.5])).toBe(6.5);
    expect(applyTransform('sum', [])).toBe(0);
    expect(applyTransform('flatten', [[1], [2, [3]], 4])).toEqual([1, 2, [3], 4]);
    expectToolError(() => applyTransform('sum', [1, '2']), 'invalid_args', /array of numbers/);
    expectToolError(() => applyTransform('unique', 'abc'), 'invalid_args');
  });

  it('picks and omits keys of objects and arrays of objects', () => {
    expect(applyTransform('pick', { a: 1, b: 2, c: 3 }, { keys: ['a', 'c'] })).toEqual({ a: 1, c: 3 });
    expect(applyTransform('omit', [{ a: 1, b: 2 }, { b: 3 }], { keys: ['b'] })).toEqual([{ a: 1 }, {}]);
    expectToolError(() => applyTransform('pick', { a: 1 }), 'invalid_args', /keys/);
    expectToolError(() => applyTransform('pick', [1], { keys: ['a'] }), 'invalid_args');
  });

  it('reads one field of an object', () => {
    expect(fieldOf({ raw: [1] }, 'raw')).toEqual([1]);
    expectToolError(() => fieldOf({ raw: [1] }, 'cooked'), 'invalid_args', /no field "cooked"/);
    expectToolError(() => fieldOf([1], 'raw'), 'invalid_args');
  });

  it('does not modify its input', () => {
    const input = [3, 1, 2];
    applyTransform('sort', input);
    applyTransform('reverse', input);
    expect(input).toEqual([3, 1, 2]);
  });
});

describe('analytics-tool summaries', () => {
  it('computes count/min/max/mean/sum of the numbers', () => {
    expect(numericStats([4, 1, 7])).toEqual({ count: 3, min: 1, max: 7, mean: 4, sum: 12 });
    expect(numericStats([-2, 'x', null, 2])).toEqual({ count: 2, min: -2, max: 2, mean: 0, sum: 0 });
    expect(numericStats(['a'])).toBeUndefined();
  });

  it('summarizes arrays, objects and scalars', () => {
    expect(summarize([1, 2, 'a'])).toEqual({
      type: 'array',
      size: 3,
      itemTypes: { number: 2, string: 1 },
      stats: { count: 2, min: 1, max: 2, mean: 1.5, sum: 3 },
    });
    expect(summarize({ b: 1, a: 2 })).toEqual({ type: 'object', size: 2, keys: ['a', 'b'] });
    expect(summarize('hello')).toEqual({ type: 'string', size: 5 });
    expect(summarize(null)).toEqual({ type: 'null' });
  });

  it('takes the numbers of a field across an array of objects, or a member of an object', () => {
    const rows = [{ price: 10 }, { price: 30 }, { price: 'n/a' }, { other: 1 }];
    expect(summarize(rows, 'price')).toMatchObject({
      field: 'price',
      fieldCount: 3,
      stats: { count: 2, min: 10, max: 30, mean: 20, sum: 40 },
    });
    expect(summarize({ raw: [5, 15] }, 'raw')).toMatchObject({ field: 'raw', stats: { mean: 10 } });
    expectToolError(() => summarize({ raw: [] }, 'missing'), 'invalid_args', /no field "missing"/);
    expectToolError(() => summarize(42, 'x'), 'invalid_args');
  });
});

describe('math-service integration', () => {
  it('integrates polynomials exactly', () => {
    expect(integratePolynomial([5], 1, 3)).toBe(10);
    expect(integratePolynomial([0, 0, 3], -1, 2)).toBe(9); // x^3 from -1 to 2
    expect(integratePolynomial([1, 2, 3], 2, 0)).toBe(-14); // bounds swapped: sign flips
  });
});

describe('export-tool CSV', () => {
  it('quotes fields as RFC 4180 asks', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\r')).toBe('"cr\r"');
    expect(csvField(null)).toBe('');
    expect(csvField(undefined)).toBe('');
    expect(csvField(3.5)).toBe('3.5');
    expect(csvField(false)).toBe('false');
    expect(csvField({ a: [1, 2] })).toBe('"{""a"":[1,2]}"');
  });

  it('writes a header of the union of keys, in order of appearance', () => {
    expect(
      toCsv([
        { a: 1, b: 'x,y' },
        { c: true, a: 2 },
      ]),
    ).toBe('a,b,c\r\n1,"x,y",\r\n2,,true\r\n');
  });

  it('writes arrays of scalars as one column, one object as one row', () => {
    expect(toCsv([1, 'two', null])).toBe('value\r\n1\r\ntwo\r\n\r\n');
    expect(toCsv({ k: 'v' })).toBe('k\r\nv\r\n');
    expect(toCsv([])).toBe('');
  });

  it('refuses data that has no tabular shape', () => {
    expectToolError(() => toCsv('text'), 'invalid_args');
    expectToolError(() => toCsv([{ a: 1 }, 2]), 'invalid_args', /not a mix/);
    expectToolError(() => toCsv([[1, 2]]), 'invalid_args');
  });
});

describe('export-tool paths', () => {
  it('accepts relative paths and normalizes them', () => {
    expect(exportPathSegments('a/./b//c.csv')).toEqual(['a', 'b', 'c.csv']);
    expect(exportPathSegments('report.json')).toEqual(['report.json']);
    expect(exportPathSegments(`a/b/c/d/${'x'.repeat(255)}`)).toHaveLength(5);
  });

  it.each([
    ['../escape.json', /\.\./],
    ['a/../../escape.json', /\.\./],
    ['/etc/passwd', /relative/],
    ['a\\b.json', /relative/],
    ['C:/x.json', /relative/],
    ['bad\0name.json', /NUL/],
    ['dir/', /name a file/],
    ['.', /name a file/],
    [`${'é'.repeat(128)}.csv`, /at most 255 bytes/], // 260 bytes in 132 characters
    [`dir/${'a'.repeat(256)}`, /at most 255 bytes/],
    ['a/b/c/d/e/f.csv', /more than 4 directories/],
    ['.export-tmp-1234', /must not start/],
  ])('refuses %j', (path, message) => {
    expectToolError(() => exportPathSegments(path), 'invalid_args', message);
  });
});

describe('export-tool write-export', () => {
  const RESOURCE: Resource = {
    name: 'sales',
    data: [
      { region: 'north', total: 10 },
      { region: 'south, east', total: 20 },
    ],
    createdBy: 'data-tool',
    updatedBy: 'data-tool',
    createdAt: 1,
    updatedAt: 1,
    version: 1,
  };
  const EXPECTED_CSV = 'region,total\r\nnorth,10\r\n"south, east",20\r\n';

  /** Just enough shared context for export: one fixed resource. */
  const shared: SharedContext = {
    getResource: (name) => Promise.resolve(name === RESOURCE.name ? RESOURCE : undefined),
    createResource: () => Promise.reject(new Error('not used')),
    updateResource: () => Promise.reject(new Error('not used')),
    listResources: () => Promise.resolve([RESOURCE]),
    deleteResource: () => Promise.reject(new Error('not used')),
    transaction: () => Promise.reject(new Error('not used')),
    queryResources: () => Promise.reject(new Error('not used')),
  };

  let registry: ToolRegistry;
  let writeExport: LoadedAction;
  let work: string;
  let exportDir: string;
  /** Where conversation conv-1's files go. */
  let convDir: string;
  let outside: string;

  beforeAll(async () => {
    const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    registry = new ToolRegistry({ hotReload: false, logger: quiet });
    const found = (await registry.load()).actions.find((a) => a.qualifiedName === 'export-tool/write-export');
    if (!found) throw new Error('export-tool/write-export not loaded');
    writeExport = found;
  });
  afterAll(() => registry.close());

  beforeEach(async () => {
    work = await mkdtemp(join(tmpdir(), 'export-test-'));
    exportDir = join(work, 'exports'); // not created yet: the action creates it
    convDir = join(exportDir, 'conv-1');
    outside = join(work, 'outside');
    await mkdir(outside);
  });
  afterEach(() => rm(work, { recursive: true, force: true }));

  function run(args: Record<string, unknown>): Promise<unknown> {
    const parsed = writeExport.parseArgs(args);
    if (!parsed.ok) throw new Error(`args rejected: ${parsed.path}: ${parsed.message}`);
    const ctx: ToolContext = {
      conversationId: 'conv-1',
      toolName: 'export-tool',
      action: 'write-export',
      args: parsed.value,
      sharedContext: shared,
      logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      exportDir,
    };
    return writeExport.run(parsed.value, ctx);
  }

  it("writes a normal relative path inside the conversation's export directory", async () => {
    const result = await run({ name: 'sales', format: 'csv', path: 'reports/./q1/sales.csv' });

    expect(result).toEqual({ name: 'sales', format: 'csv', path: 'reports/q1/sales.csv', bytes: EXPECTED_CSV.length });
    await expect(readFile(join(convDir, 'reports', 'q1', 'sales.csv'), 'utf8')).resolves.toBe(EXPECTED_CSV);
  });

  it('overwrites an existing export with the new content', async () => {
    await mkdir(convDir, { recursive: true });
    await writeFile(join(convDir, 'sales.json'), 'x'.repeat(5000));
    await run({ name: 'sales', format: 'json', path: 'sales.json' });
    await expect(readFile(join(convDir, 'sales.json'), 'utf8')).resolves.toBe(JSON.stringify(RESOURCE.data, null, 2));
  });

  it.each([
    ['a ".." segment', (): string => '../outside/escape.csv'],
    ['an absolute path', (): string => join(outside, 'escape.csv')],
    ['a NUL byte', (): string => 'a\0b.csv'],
  ])('refuses %s', async (_label, makePath) => {
    await expect(run({ name: 'sales', format: 'csv', path: makePath() })).rejects.toMatchObject({
      code: 'invalid_args',
    });
    expect(existsSync(join(outside, 'escape.csv'))).toBe(false);
  });

  it('refuses a directory symlink inside the export directory that points outside', async () => {
    await mkdir(convDir, { recursive: true });
    await symlink(outside, join(convDir, 'link'));

    const attempt = run({ name: 'sales', format: 'csv', path: 'link/escape.csv' });

    await expect(attempt).rejects.toBeInstanceOf(ToolError);
    await expect(attempt).rejects.toMatchObject({
      code: 'invalid_args',
      message: expect.stringMatching(/symbolic link/),
    });
    expect(existsSync(join(outside, 'escape.csv'))).toBe(false);
  });

  it('refuses a file symlink pointing outside, leaving its target untouched', async () => {
    await mkdir(convDir, { recursive: true });
    await writeFile(join(outside, 'victim.txt'), 'precious');
    await symlink(join(outside, 'victim.txt'), join(convDir, 'sales.csv'));

    await expect(run({ name: 'sales', format: 'csv', path: 'sales.csv' })).rejects.toMatchObject({
      code: 'invalid_args',
    });
    await expect(readFile(join(outside, 'victim.txt'), 'utf8')).resolves.toBe('precious');
  });

  it('refuses a hard link to a file outside, leaving it untouched', async () => {
    await mkdir(convDir, { recursive: true });
    await writeFile(join(outside, 'victim.txt'), 'precious');
    await link(join(outside, 'victim.txt'), join(convDir, 'sales.csv'));

    await expect(run({ name: 'sales', format: 'csv', path: 'sales.csv' })).rejects.toMatchObject({
      code: 'invalid_args',
    });
    await expect(readFile(join(outside, 'victim.txt'), 'utf8')).resolves.toBe('precious');
  });

  it('reports a missing resource as resource_not_found', async () => {
    await expect(run({ name: 'nope', format: 'json', path: 'x.json' })).rejects.toMatchObject({
      code: 'resource_not_found',
      message: 'Resource not found: nope',
    });
  });
});
