/**
 * The redaction of secrets in what an upstream gives back
 * (src/participants/mcp-errors.ts): every form an echo may take, the
 * longest first, and values too short to tell from ordinary text left alone.
 */
import fc from 'fast-check';
import { redactDeep, redactorOf } from '../../src/participants/redaction';

describe('redactorOf', () => {
  const redact = redactorOf(['Bearer tok-12345678', 'p@ss word/+=', 'on']);

  it('redacts a value as is, URL-encoded and JSON-escaped', () => {
    expect(redact('auth=Bearer tok-12345678!')).toBe('auth=[redacted]!');
    expect(redact(`q=${encodeURIComponent('p@ss word/+=')}`)).toBe('q=[redacted]');
    expect(redact(JSON.stringify({ v: 'p@ss word/+=' }))).toBe('{"v":"[redacted]"}');
  });

  it('redacts the long parts of a header value on their own (the token without its scheme)', () => {
    expect(redact('token tok-12345678 seen')).toBe('token [redacted] seen');
    expect(redact('Bearer is a scheme')).toBe('Bearer is a scheme');
  });

  it('leaves values shorter than four characters alone', () => {
    expect(redact('turn it on')).toBe('turn it on');
  });

  // Secrets drawn from characters the placeholder does not have, so it cannot spell one by itself.
  it('never leaves a secret of four characters or more in any text (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Z0-9_.~-]{4,40}$/), fc.string(), fc.string(), (secret, before, after) => {
        const text = `${before}${secret}${after}`;
        expect(redactorOf([secret])(text)).not.toContain(secret);
      }),
    );
  });
});

describe('redactDeep', () => {
  it('redacts every string of a JSON value, keys too', () => {
    const redact = redactorOf(['s3cret-value']);
    expect(redactDeep({ a: ['x s3cret-value', 1, null, { 's3cret-value': true }], b: 's3cret-value' }, redact)).toEqual(
      { a: ['x [redacted]', 1, null, { '[redacted]': true }], b: '[redacted]' },
    );
  });
});
