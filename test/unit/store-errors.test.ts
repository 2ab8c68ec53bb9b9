/**
 * src/db raises the domain's database conditions, and AppErrors for database
 * errors that are the client's or a lost race's; the domain recognises them
 * by type, along a tool's own wrapping, never by driver codes.
 */
import { AppError, TransactionAbortedError, UnavailableError, isUnavailable } from '../../src/core/errors';
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

it('turns a foreign key violation (pg, or Prisma with or without its adapter error) into not_found', () => {
  const prismaFk = Object.assign(new Error('prisma'), { code: 'P2003' });
  const adapterFk = Object.assign(new Error('prisma'), {
    code: 'P2010',
    meta: { driverAdapterError: { cause: { originalCode: '23503' } } },
  });
  for (const original of [pgError('23503'), prismaFk, adapterFk]) {
    const translated = translateError(original);
    expect(translated).toBeInstanceOf(AppError);
    expect(translated).toMatchObject({ code: 'not_found', cause: original });
  }
});

it('turns text the database cannot store into validation_failed', () => {
  for (const code of ['22P05', '22021']) {
    expect(translateError(pgError(code))).toMatchObject({ code: 'validation_failed' });
  }
});

it('passes every other error through unchanged', () => {
  const unique = pgError('23505');
  expect(translateError(unique)).toBe(unique);
});

it('isUnavailable sees an UnavailableError a tool wrapped in its own error', () => {
  const wrapped = new Error('tool gave up', { cause: new UnavailableError(pgError('08006')) });
  expect(isUnavailable(wrapped)).toBe(true);
  expect(isUnavailable(new Error('tool failed', { cause: pgError('08006') }))).toBe(false);
});
