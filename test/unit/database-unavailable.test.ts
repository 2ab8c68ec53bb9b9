/**
 * The shapes of "database unreachable" errors seen in test/db/faults.test.ts,
 * kept here so a change to isDatabaseUnavailable is checked without a cluster.
 */
import { ConnectionLostError, isDatabaseUnavailable } from '../../src/db/database';

/** What Prisma 7 throws for a driver error it has no code of its own for (seen: 57P01). */
function prismaDriverError(sqlState: string): Error {
  return Object.assign(new Error('Database error'), {
    code: 'P2039',
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'postgres', originalCode: sqlState } } },
  });
}

describe('isDatabaseUnavailable', () => {
  it('recognises a terminated backend reported through Prisma', () => {
    expect(isDatabaseUnavailable(prismaDriverError('57P01'))).toBe(true);
  });

  it('does not call an ordinary driver error reported through Prisma an outage', () => {
    expect(isDatabaseUnavailable(prismaDriverError('23505'))).toBe(false);
  });

  it('recognises a query refused on a client whose connection was lost', () => {
    expect(isDatabaseUnavailable(new ConnectionLostError(new Error('Connection terminated unexpectedly')))).toBe(true);
  });

  it('does not recognise an uncoded error by its message', () => {
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(false);
  });
});
