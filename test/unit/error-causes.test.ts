/**
 * Walking an error's causes (src/core/errors.ts findCause), the one walk the
 * error handler, negotiate's action runner and the tool sandbox go through.
 */
import { AppError, UnavailableError, findCause, isUnavailable, unavailableCause } from '../../src/core/errors';

const isAppError = (e: Error): e is AppError => e instanceof AppError;

describe('findCause', () => {
  it('finds the error itself or one it wraps, the outermost match first', () => {
    const inner = new AppError('not_found', 'inner');
    const outer = new AppError('conflict', 'outer', undefined, { cause: inner });
    expect(findCause(outer, isAppError)).toBe(outer);
    const wrapped = new Error('tool failed', { cause: new Error('middle', { cause: inner }) });
    expect(findCause(wrapped, isAppError)).toBe(inner);
  });

  it('answers undefined for no match, for a non-Error, and past 8 levels', () => {
    expect(findCause(new Error('plain'), isAppError)).toBeUndefined();
    expect(findCause('a string', isAppError)).toBeUndefined();
    let deep: Error = new AppError('conflict', 'deep');
    for (let i = 0; i < 7; i++) deep = new Error(`level ${i}`, { cause: deep });
    expect(findCause(deep, isAppError)).toBeDefined(); // the 8th error along the chain
    expect(findCause(new Error('one more', { cause: deep }), isAppError)).toBeUndefined();
  });

  it('ends on a cyclic chain', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(findCause(a, isAppError)).toBeUndefined();
  });
});

describe('unavailableCause', () => {
  it('is the UnavailableError a tool wrapped, whose message says what was unavailable', () => {
    const jwks = new UnavailableError(new Error('ECONNREFUSED'), 'The identity provider is unavailable');
    const err = new Error('tool wrapped it', { cause: jwks });
    expect(unavailableCause(err)?.message).toBe('The identity provider is unavailable');
    expect(isUnavailable(err)).toBe(true);
    expect(isUnavailable(new Error('other'))).toBe(false);
  });
});
