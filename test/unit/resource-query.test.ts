/**
 * The dense parts of queries without a database: cursors (property-based:
 * any resource's cursor decodes to its place, under its own sort only) and
 * the embedded database's back-reference check over Postgres' printed
 * jsonpath (the forms below are what `$1::jsonpath::text` printed).
 */
import fc from 'fast-check';
import { AppError } from '../../src/core/errors';
import { decodeCursor, encodeCursor, parseSort, toListQuery } from '../../src/core/resource-query';
import type { Resource, ResourceSort } from '../../src/core/tool-interface';
import { hasBackReference } from '../../src/db/resource-query';

const SORTS: ResourceSort[] = ['name', '-name', 'updatedAt', '-updatedAt', 'createdAt', '-createdAt'];
const NAME = fc.stringMatching(/^[A-Za-z0-9:_-]{1,128}$/);
const EPOCH_MS = fc.integer({ min: 0, max: 8.64e15 });

function resource(name: string, createdAt: number, updatedAt: number): Resource {
  return { name, data: null, createdBy: 'client', updatedBy: 'client', createdAt, updatedAt, version: 1 };
}

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError');
}

describe('cursors', () => {
  it('decode to the last row under the sort they were made for, and are refused under any other', () => {
    fc.assert(
      fc.property(NAME, EPOCH_MS, EPOCH_MS, fc.constantFrom(...SORTS), (name, created, updated, made) => {
        const sort = parseSort(made);
        const cursor = encodeCursor(sort, resource(name, created, updated));
        expect(cursor).toMatch(/^[A-Za-z0-9_-]{2,256}$/);
        const value = sort.key === 'name' ? name : sort.key === 'createdAt' ? created : updated;
        expect(decodeCursor(cursor, sort)).toEqual({ value, name });
        for (const other of SORTS.filter((s) => s !== made)) {
          expect(refusal(() => decodeCursor(cursor, parseSort(other))).code).toBe('validation_failed');
        }
      }),
    );
  });

  it('the default sort keeps the listing endpoint’s cursor: the name in base64url', () => {
    expect(encodeCursor(parseSort('name'), resource('a-3', 1, 2))).toBe(Buffer.from('a-3').toString('base64url'));
  });

  const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  it.each([
    ['not base64url', '!!!', 'name'],
    ['padded', `${Buffer.from('a-3').toString('base64url')}=`, 'name'],
    ['a name outside the alphabet', Buffer.from('a b').toString('base64url'), 'name'],
    ['a fraction', b64(['updatedAt', 1.5, 'a']), 'updatedAt'],
    ['a negative time', b64(['updatedAt', -1, 'a']), 'updatedAt'],
    ['a string time', b64(['updatedAt', '1', 'a']), 'updatedAt'],
    ['a bad name', b64(['updatedAt', 1, '../x']), 'updatedAt'],
    ['two fields', b64(['updatedAt', 1]), 'updatedAt'],
    ['-name with another name', b64(['-name', 'b', 'a']), '-name'],
  ])('%s is refused', (_what, cursor, sort) => {
    expect(refusal(() => decodeCursor(cursor, parseSort(sort))).errors).toEqual([
      { path: 'cursor', message: expect.any(String) as string },
    ]);
  });
});

describe('toListQuery', () => {
  it('asks the store for one row more than the page, name ascending by default', () => {
    expect(toListQuery({})).toEqual({ sort: { key: 'name', descending: false }, limit: 101 });
    expect(toListQuery({ limit: 500, sort: '-createdAt', updatedSince: 0 })).toEqual({
      sort: { key: 'createdAt', descending: true },
      limit: 501,
      updatedSince: new Date(0),
    });
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 501 }, 'limit'],
    [{ limit: 2.5 }, 'limit'],
    [{ sort: 'size' }, 'sort'],
    [{ filter: '' }, 'filter'],
    [{ filter: '   ' }, 'filter'],
    [{ filter: 'x'.repeat(4097) }, 'filter'],
    [{ filter: 42 }, 'filter'],
    [{ updatedSince: -1 }, 'updatedSince'],
    [{ prefix: 7 }, 'prefix'],
  ])('%j is refused at %s', (query, path) => {
    const err = refusal(() => toListQuery(query as never));
    expect(err.code).toBe('validation_failed');
    expect(err.errors?.[0]?.path).toBe(path);
  });
});

describe('hasBackReference (the embedded database’s guard)', () => {
  it.each([
    ['($."s" like_regex "^(a)\\\\1$" flag "i")', true],
    ['$."s" like_regex "(x)(y)\\\\2"', true],
    ['(exists ($."a"?(@ like_regex "(a)\\\\9")))', true],
    ['$."s" like_regex "^(.*)(.*)(.*)(.*)\\\\4\\\\3\\\\2\\\\1$"', true],
    // An escaped backslash and then a digit: a literal backslash, no reference.
    ['($."s" like_regex "\\\\\\\\1")', false],
    // An escaped backslash, then a reference.
    ['($."s" like_regex "(a)\\\\\\\\\\\\1")', true],
    // `\d`, `\w`: classes, not references.
    ['($."s" like_regex "^\\\\d+\\\\w$")', false],
    // A string compared for equality that merely looks like one.
    ['($."s" == "like_regex \\"x\\\\1")', false],
    ['($."like_regex" == "\\\\1")', false],
    ['($."s" like_regex "a" && $."t" == "(a)\\\\1")', false],
  ])('%s → %s', (printed, expected) => {
    expect(hasBackReference(printed)).toBe(expected);
  });
});
