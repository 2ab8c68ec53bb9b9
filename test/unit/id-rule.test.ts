/**
 * The id rule is written once (src/core/resource-names.ts), except in the
 * `@pattern` JSDoc tag tsoa reads, which cannot import it: the generated spec
 * (kept fresh by openapi-spec.test.ts) must say the same.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ID_MAX_LENGTH, ID_PATTERN, ID_PREFIX_PATTERN, isValidId } from '../../src/core/resource-names';
import { ROOT } from '../support/db-server';

type Schema = { $ref?: string; pattern?: string; minLength?: number; maxLength?: number };
type Spec = {
  components: { schemas: Record<string, Schema> };
  paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema: Schema }[] }>>;
};
const spec = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as Spec;

it('is the rule API.md "Conventions" states', () => {
  expect(ID_PATTERN.source).toBe('^[A-Za-z0-9:_-]{1,128}$');
});

it("the spec's Id schema is the id rule: same pattern and lengths", () => {
  expect(spec.components.schemas.Id).toMatchObject({
    pattern: ID_PATTERN.source,
    minLength: 1,
    maxLength: ID_MAX_LENGTH,
  });
});

it('every conversation id and resource name in a path is an Id', () => {
  const idParams = Object.values(spec.paths)
    .flatMap((ops) => Object.values(ops).flatMap((op) => op.parameters ?? []))
    .filter((p) => p.in === 'path' && ['id', 'conversationId'].includes(p.name));
  expect(idParams.length).toBeGreaterThan(0);
  for (const p of idParams) expect(p.schema).toEqual({ $ref: '#/components/schemas/Id' });
});

it.each([
  ['a', true],
  ['conv:1_x-Y', true],
  ['x'.repeat(ID_MAX_LENGTH), true],
  ['x'.repeat(ID_MAX_LENGTH + 1), false],
  ['', false],
  ['a/b', false],
  ['a.b', false],
  ['..', false],
  ['a b', false],
  ['é', false],
  ['a\nb', false],
])('isValidId(%j) is %s', (value, valid) => {
  expect(isValidId(value)).toBe(valid);
});

it('isValidId refuses what is not a string', () => {
  for (const value of [undefined, null, 7, ['a'], { toString: () => 'a' }]) expect(isValidId(value)).toBe(false);
});

it('a prefix is the same alphabet, possibly empty', () => {
  expect(ID_PREFIX_PATTERN.test('')).toBe(true);
  expect(ID_PREFIX_PATTERN.test('x'.repeat(ID_MAX_LENGTH))).toBe(true);
  expect(ID_PREFIX_PATTERN.test('x'.repeat(ID_MAX_LENGTH + 1))).toBe(false);
  expect(ID_PREFIX_PATTERN.test('a/')).toBe(false);
});
