/**
 * What a transaction's operations may be (API.md, "Shared context, M6",
 * Transactions), as one zod schema for every way in: the REST endpoint, the
 * shared context's `transaction` and `data-tool/apply-batch`. Each kind of
 * operation takes only its own fields, so a `delete` with `data` or a
 * `create` with `ifMatch` is refused rather than half understood.
 *
 * Imports only zod and the name and TTL rules: tool-interface.ts re-exports it for tools.
 */
import { z } from 'zod';
import { ID_PATTERN, ID_RULE } from './resource-names';
import { ZTtlSeconds } from './resource-ttl';

/** Operations in one transaction, at most (API.md). */
export const MAX_TRANSACTION_OPERATIONS = 100;

const ZName = z.string().regex(ID_PATTERN, ID_RULE).describe('Resource name in the conversation shared context');
const ZIfMatch = z
  .number()
  .int()
  .min(1)
  .describe('The version the resource must be at; otherwise the transaction fails (precondition_failed)');
/** The TTL rule's own schema (resource-ttl.ts): one second to a year. */
const ZTtl = ZTtlSeconds;
/** Present: a bare z.unknown() would accept a missing key. */
const ZData = z
  .unknown()
  .refine((value) => value !== undefined, 'Required: the resource data (any JSON value)')
  .describe('The resource data, any JSON value');

export const ZTransactionOperation = z.discriminatedUnion('op', [
  z
    .object({ op: z.literal('create'), name: ZName, data: ZData, ttlSeconds: ZTtl.optional() })
    .strict()
    .describe('Create `name`; fails (resource_exists) if it exists'),
  z
    .object({
      op: z.literal('update'),
      name: ZName,
      data: ZData,
      ifMatch: ZIfMatch.optional(),
      ttlSeconds: ZTtl.optional(),
    })
    .strict()
    .describe('Replace the data of the existing `name`'),
  z
    .object({ op: z.literal('delete'), name: ZName, ifMatch: ZIfMatch.optional() })
    .strict()
    .describe('Delete the existing `name`'),
  z
    .object({ op: z.literal('check'), name: ZName, ifMatch: ZIfMatch.optional() })
    .strict()
    .describe('Assert that `name` exists (at `ifMatch`); writes nothing'),
]);

export const ZTransactionOperations = z
  .array(ZTransactionOperation)
  .min(1)
  .max(MAX_TRANSACTION_OPERATIONS)
  .describe('Applied in order, all or none (1 to 100)');

export type CheckedOperation = z.output<typeof ZTransactionOperation>;
