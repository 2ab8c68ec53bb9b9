/**
 * src/db raises the domain's two database conditions; the domain recognises
 * them by type, along a tool's own wrapping, never by driver codes.
 */
import { TransactionAbortedError, UnavailableError, isUnavailable } from '../../src/core/errors';
import { translateError } from '../../src/db/sql';

const pgError = (code: string): Error => Object.assign(new Error(`pg ${code}`), { code });

it('turns connection failures into UnavailableError, keeping the driver error as the cause', () => {
  for (const code of ['08006', '57P01', 'ECONNREFUSED', '53300']) {
    const original = pgError(code);
    const translated = translateError(original);
    expect(translated).toBeInstanceOf(UnavailableError);
    expect((translated as Error).cause).toBe(original);
  }
});

it('turns deadlocks and serialization failures into TransactionAbortedError', () => {
  expect(translateError(pgError('40P01'))).toBeInstanceOf(TransactionAbortedError);
  expect(translateError(pgError('40001'))).toBeInstanceOf(TransactionAbortedError);
});

it('passes every other error through unchanged', () => {
  const fk = pgError('23503');
  expect(translateError(fk)).toBe(fk);
});

it('isUnavailable sees an UnavailableError a tool wrapped in its own error', () => {
  const wrapped = new Error('tool gave up', { cause: new UnavailableError(pgError('08006')) });
  expect(isUnavailable(wrapped)).toBe(true);
  expect(isUnavailable(new Error('tool failed', { cause: pgError('08006') }))).toBe(false);
});
