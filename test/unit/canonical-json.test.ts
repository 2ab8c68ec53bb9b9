/**
 * Canonical JSON and the args digest (src/core/canonical-json.ts), the one
 * home of both: audit entries, approvals' args_digest and idempotency's
 * request_digest are stored, so the text and digests pinned here must not
 * change (the audit hash contract itself: test/unit/audit-hash.test.ts).
 */
import fc from 'fast-check';
import { argsDigest, canonicalJson, sha256Hex } from '../../src/core/canonical-json';

/** Rebuilds a JSON value with its object keys in a shuffled order. */
function reordered(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => reordered(v, seed + i));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  const rotated = keys
    .slice(seed % (keys.length || 1))
    .concat(keys.slice(0, seed % (keys.length || 1)))
    .reverse();
  return Object.fromEntries(rotated.map((k) => [k, reordered((value as Record<string, unknown>)[k], seed + 1)]));
}

describe('canonicalJson', () => {
  it('sorts keys recursively, keeps array order, writes no whitespace', () => {
    expect(canonicalJson({ b: true, a: [1, { d: 'é', c: null }] })).toBe('{"a":[1,{"c":null,"d":"é"}],"b":true}');
  });

  it('leaves out undefined and function members, as JSON.stringify does; array slots holding them are null', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: 1 })).toBe('{"c":1}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('sorts keys by UTF-16 code unit, not by locale', () => {
    expect(canonicalJson({ b: 1, B: 2, é: 3, '\u{1F600}': 4, a: 5 })).toBe('{"B":2,"a":5,"b":1,"é":3,"😀":4}');
  });

  it('for any JSON value: parses back to it, and equal values in any key order give equal text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, seed) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(reordered(value, seed))).toBe(text);
      }),
    );
  });
});

describe('argsDigest', () => {
  it('is SHA-256 hex of the canonical JSON, absent args hashed as {} (values stored before stay valid)', () => {
    expect(argsDigest({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
    expect(argsDigest(undefined)).toBe(argsDigest({}));
    expect(argsDigest({ b: true, a: [1, { d: 'é', c: null }] })).toBe(
      '47f93a44aba63c7259429d766b2137b9366b6a5015c66057a22f510970ca8c0a',
    );
    expect(argsDigest({ x: 1 })).toBe(sha256Hex('{"x":1}'));
  });
});
