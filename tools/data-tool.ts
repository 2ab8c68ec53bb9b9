/**
 * CRUD on the conversation's shared context (seed 002, pattern 1: the
 * producer). Reads need level 1, anything that changes a resource level 2.
 */
import { z } from 'zod';
import {
  ZResourceName,
  ZResourceOutput,
  ZResourcePrefix,
  ZTransactionOperations,
  ZTtlSeconds,
  defineAction,
  defineTool,
  requireResource,
  resourceNotFound,
} from '../src/core/tool-interface';

/**
 * Any JSON value, but present: a bare z.unknown() would accept a missing key
 * and report it as "expected nonoptional", which helps nobody.
 */
const ZData = z
  .unknown()
  .refine((value) => value !== undefined, 'Required: the resource data (any JSON value)')
  .describe('The resource data, any JSON value');

export default defineTool({
  name: 'data-tool',
  version: '1.0.0',
  description:
    'Creates, reads, updates, lists and deletes resources in the conversation shared context, one at a time or as an all-or-nothing batch.',
  actions: {
    'create-resource': defineAction({
      description:
        'Create a new resource `name` holding `data`; fails if it already exists. With `ttlSeconds` it expires then.',
      level: 2,
      input: z.object({ name: ZResourceName, data: ZData, ttlSeconds: ZTtlSeconds.optional() }),
      output: z.object({ message: z.string(), resource: ZResourceOutput }),
      handler: async ({ name, data, ttlSeconds }, ctx) => ({
        message: 'Resource created by data-tool',
        resource: await ctx.sharedContext.createResource(name, data, { ttlSeconds }),
      }),
      // The producer of seed 002's pattern 1: what the consumers' requires name (API.md, "Tool dependencies").
      produces: [{ resource: '{name}' }],
      // One write, its last step: it commits on its own, with the call's audit entry.
      singleWrite: true,
    }),
    'read-resource': defineAction({
      description: 'Read the resource `name` (its data, owner, timestamps and version).',
      level: 1,
      input: z.object({ name: ZResourceName }),
      output: ZResourceOutput,
      handler: ({ name }, ctx) => requireResource(ctx.sharedContext, name),
      prefetch: ({ name }) => name,
    }),
    'update-resource': defineAction({
      description:
        'Replace the data of the existing resource `name` with `data` (the whole value). ' +
        'With `ttlSeconds` it expires then; without, it no longer expires.',
      level: 2,
      input: z.object({ name: ZResourceName, data: ZData, ttlSeconds: ZTtlSeconds.optional() }),
      output: ZResourceOutput,
      handler: ({ name, data, ttlSeconds }, ctx) => ctx.sharedContext.updateResource(name, data, { ttlSeconds }),
      // No requires: a missing resource stays its own resource_not_found, as read-resource's does.
      produces: [{ resource: '{name}' }],
      singleWrite: true,
    }),
    'list-resources': defineAction({
      description: 'List the resources of the conversation, optionally only those whose name starts with `prefix`.',
      level: 1,
      input: z.object({ prefix: ZResourcePrefix.optional() }),
      output: z.object({ resources: z.array(ZResourceOutput).describe('Ordered by name') }),
      handler: async ({ prefix }, ctx) => ({
        resources: await ctx.sharedContext.listResources({ prefix }),
      }),
    }),
    'apply-batch': defineAction({
      description:
        'Apply `operations` (create, update, delete, check; each on a `name`, with `data`, `ifMatch` version, `ttlSeconds` as it needs) all together or not at all: the first failing one fails the call, naming it as operations/K, and nothing is written.',
      level: 2,
      input: z.object({ operations: ZTransactionOperations }),
      output: z.object({
        results: z
          .array(ZResourceOutput.nullable())
          .describe('One per operation: the resource as it left it, null for a delete'),
      }),
      handler: async ({ operations }, ctx) => ({ results: await ctx.sharedContext.transaction(operations) }),
    }),
    'delete-resource': defineAction({
      description: 'Delete the resource `name`.',
      level: 2,
      input: z.object({ name: ZResourceName }),
      output: z.object({ deleted: z.literal(true), name: z.string() }),
      handler: async ({ name }, ctx) => {
        if (!(await ctx.sharedContext.deleteResource(name))) {
          throw resourceNotFound(name);
        }
        return { deleted: true as const, name };
      },
      singleWrite: true,
    }),
  },
});
