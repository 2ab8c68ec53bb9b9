/**
 * The TTL rule (API.md, "Shared context, M6", TTL) is written once
 * (src/core/resource-ttl.ts), except in the JSDoc tags tsoa reads for PUT's
 * body, which cannot import it: the generated spec must say the same, and
 * every way in (REST, the shared context, data-tool's args) refuses the
 * same values with the same words.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TTL_MAX_SECONDS, TTL_RULE, ZTtlSeconds, isValidTtl } from '../../src/core/resource-ttl';
import { ttlSecondsOf } from '../../src/core/resource-service';
import { ROOT } from '../support/db-server';

type Spec = { components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> } };
const spec = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as Spec;

it('is the range API.md states: 1 to 31,536,000 seconds', () => {
  expect(TTL_MAX_SECONDS).toBe(31_536_000);
});

it("PUT's ttlSeconds in the spec is the same rule, and a transaction operation's", () => {
  for (const body of ['PutResourceBody', 'TransactionOperationBody']) {
    expect(spec.components.schemas[body]!.properties.ttlSeconds).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: TTL_MAX_SECONDS,
    });
  }
});

const cases: Array<[unknown, boolean]> = [
  [1, true],
  [60, true],
  [TTL_MAX_SECONDS, true],
  [0, false],
  [-1, false],
  [TTL_MAX_SECONDS + 1, false],
  [1.5, false],
  [Number.NaN, false],
  [Number.POSITIVE_INFINITY, false],
  ['60', false],
  [null, false],
];

it.each(cases)('%p: valid %p everywhere, refused with the rule otherwise', (value, valid) => {
  expect(isValidTtl(value)).toBe(valid);
  const parsed = ZTtlSeconds.safeParse(value);
  expect(parsed.success).toBe(valid);
  if (!parsed.success) expect(parsed.error.issues.map((i) => i.message)).toEqual([TTL_RULE]);
  if (valid) expect(ttlSecondsOf({ ttlSeconds: value })).toBe(value);
  else expect(() => ttlSecondsOf({ ttlSeconds: value })).toThrow(`ttlSeconds: ${TTL_RULE}`);
});

it('absent options or an absent ttlSeconds mean no expiry; options that are no object are refused', () => {
  expect(ttlSecondsOf(undefined)).toBeUndefined();
  expect(ttlSecondsOf({})).toBeUndefined();
  expect(ttlSecondsOf({ ttlSeconds: undefined })).toBeUndefined();
  expect(() => ttlSecondsOf(60)).toThrow(/options: must be an object/);
});
