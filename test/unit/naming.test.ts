import fc from 'fast-check';
import {
  MAX_NAME_LENGTH,
  PROVIDER_NAME_RE,
  isValidActionName,
  isValidToolName,
  parseQualified,
  providerName,
  qualifiedName,
  toKebabCase,
} from '../../src/core/naming';

/** A valid kebab-case name: words of [a-z0-9], the first starting with a letter, at most 31 characters. */
const kebabName = fc
  .tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/), fc.array(fc.stringMatching(/^[a-z0-9]{1,7}$/), { maxLength: 4 }))
  .map(([first, rest]) => [first, ...rest].join('-'))
  .filter((name) => name.length <= MAX_NAME_LENGTH);

/** Characters that can never occur in a name. */
const invalidChar = fc.constantFrom('A', 'Z', '_', '/', ' ', '.', '@', 'é', '\n', '\u0000', '🙂', ':');

/** A valid name with one invalid character inserted somewhere. */
const nameWithInvalidChar = fc.tuple(kebabName, invalidChar, fc.nat()).map(([name, bad, at]) => {
  const i = at % (name.length + 1);
  return name.slice(0, i) + bad + name.slice(i);
});

describe('names', () => {
  it('accepts generated kebab names (sanity check of the generator)', () => {
    fc.assert(fc.property(kebabName, (name) => isValidToolName(name) && isValidActionName(name)));
  });

  it('maps the canonical form back to exactly the same tool and action', () => {
    fc.assert(
      fc.property(kebabName, kebabName, (tool, action) => {
        expect(parseQualified(qualifiedName(tool, action))).toEqual({ tool, action, form: 'canonical' });
      }),
    );
  });

  it('maps the provider form back to exactly the same tool and action', () => {
    fc.assert(
      fc.property(kebabName, kebabName, (tool, action) => {
        expect(parseQualified(providerName(tool, action))).toEqual({ tool, action, form: 'provider' });
      }),
    );
  });

  it('produces provider names that every provider accepts', () => {
    fc.assert(
      fc.property(kebabName, kebabName, (tool, action) => {
        const name = providerName(tool, action);
        expect(name).toMatch(PROVIDER_NAME_RE);
        expect(name.length).toBeLessThanOrEqual(63);
      }),
    );
  });

  it('gives the longest names a provider name that still fits', () => {
    const longest = 'a'.repeat(MAX_NAME_LENGTH);
    expect(providerName(longest, longest)).toMatch(PROVIDER_NAME_RE);
    expect(providerName(longest, longest)).toHaveLength(63);
  });

  it('rejects names containing an invalid character, alone and in either qualified form', () => {
    fc.assert(
      fc.property(nameWithInvalidChar, kebabName, (bad, good) => {
        expect(isValidToolName(bad)).toBe(false);
        expect(isValidActionName(bad)).toBe(false);
        for (const s of [`${bad}/${good}`, `${good}/${bad}`, `${bad}_${good}`, `${good}_${bad}`]) {
          expect(parseQualified(s)).toBeUndefined();
        }
        expect(() => qualifiedName(bad, good)).toThrow(TypeError);
        expect(() => providerName(good, bad)).toThrow(TypeError);
      }),
    );
  });

  it('parses arbitrary strings only when they are exactly a qualified name', () => {
    const unit = fc.constantFrom('a', 'b', '1', '-', '/', '_', 'A', ' ');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 20 }), (s) => {
        const parsed = parseQualified(s);
        if (parsed === undefined) return;
        const rebuilt = parsed.form === 'canonical' ? qualifiedName : providerName;
        expect(rebuilt(parsed.tool, parsed.action)).toBe(s);
      }),
    );
  });

  it('enforces the length limit of 31', () => {
    expect(isValidToolName('a'.repeat(31))).toBe(true);
    expect(isValidToolName('a'.repeat(32))).toBe(false);
    expect(parseQualified(`${'a'.repeat(32)}/add`)).toBeUndefined();
    expect(parseQualified(`calculator_${'a'.repeat(32)}`)).toBeUndefined();
  });

  it.each(['', '-a', 'a-', 'a--b', '1abc', 'Abc', 'a_b', 'a b', 'a/b'])('rejects %j as a name', (name) => {
    expect(isValidToolName(name)).toBe(false);
  });

  it('parses the seed examples', () => {
    expect(qualifiedName('calculator', 'add')).toBe('calculator/add');
    expect(providerName('math-service', 'add')).toBe('math-service_add');
    expect(parseQualified('calculator/add')).toEqual({ tool: 'calculator', action: 'add', form: 'canonical' });
    expect(parseQualified('math-service_add')).toEqual({ tool: 'math-service', action: 'add', form: 'provider' });
    expect(parseQualified('data-tool/create-resource')).toEqual({
      tool: 'data-tool',
      action: 'create-resource',
      form: 'canonical',
    });
  });

  it.each([
    '',
    'add',
    'calculator/',
    '/add',
    'a/b/c',
    'a_b_c',
    'a/b_c',
    'Calculator/add',
    ' calculator/add',
    'math_service_add',
  ])('does not parse %j', (s) => {
    expect(parseQualified(s)).toBeUndefined();
  });

  it('does not throw on non-strings from untyped callers', () => {
    expect(parseQualified(undefined as unknown as string)).toBeUndefined();
    expect(isValidToolName(42 as unknown as string)).toBe(false);
  });
});

describe('toKebabCase', () => {
  it('leaves every valid name unchanged', () => {
    fc.assert(fc.property(kebabName, (name) => toKebabCase(name) === name));
  });

  it.each([
    ['createResource', 'create-resource'],
    ['CreateResource', 'create-resource'],
    ['create_resource', 'create-resource'],
    ['Create Resource', 'create-resource'],
    ['CREATE-RESOURCE', 'create-resource'],
    ['  create--resource  ', 'create-resource'],
    ['parseHTTPRequest', 'parse-http-request'],
    ['exportV2Csv', 'export-v2-csv'],
    ['__', ''],
  ])('turns %j into %j', (input, expected) => {
    expect(toKebabCase(input)).toBe(expected);
  });
});
