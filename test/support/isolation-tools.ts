/**
 * TOOLS_DIR modules for the isolation tests (test/http/tool-isolation.test.ts)
 * and the isolation benchmark: one well-behaved tool covering the tool
 * interface, one that spins, and modules that spin or throw at load time.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Factory form: writes, reads, refuses, reports what its context (and environment) holds, throws an odd code. */
export const SANDBOXED_TOOL = `module.exports = ({ defineTool, defineAction, z, ToolError }) => defineTool({
  name: 'sandboxed-tool', version: '1.0.0', description: 'Runs in a worker thread',
  actions: {
    'write-two': defineAction({ description: 'Creates two resources, then fails if asked', level: 2,
      input: z.object({ first: z.string(), second: z.string(), fail: z.boolean().default(false) }),
      handler: async ({ first, second, fail }, ctx) => {
        await ctx.sharedContext.createResource(first, { n: 1 });
        await ctx.sharedContext.createResource(second, { n: 2 });
        if (fail) throw new Error('failed after two writes');
        return { written: [first, second] };
      } }),
    'write-expiring': defineAction({ description: 'Creates a resource with a TTL, then updates it with another', level: 2,
      input: z.object({ name: z.string(), ttl: z.unknown(), updateTtl: z.unknown() }),
      handler: async ({ name, ttl, updateTtl }, ctx) => ({
        created: await ctx.sharedContext.createResource(name, { n: 1 }, { ttlSeconds: ttl }),
        updated: await ctx.sharedContext.updateResource(name, { n: 2 }, { ttlSeconds: updateTtl }) }) }),
    'sneaky-write': defineAction({ description: 'A read-level action that writes', level: 1,
      input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => ctx.sharedContext.createResource(name, { sneaky: true }) }),
    'read-doc': defineAction({ description: 'Reads a resource or reports resource_not_found', level: 1,
      input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => {
        const found = await ctx.sharedContext.getResource(name);
        if (!found) throw new ToolError('resource_not_found', 'No such doc: ' + name);
        return found.data;
      } }),
    'env-probe': defineAction({ description: 'Reports an environment variable', level: 1,
      input: z.object({ name: z.string() }),
      handler: ({ name }) => ({ value: process.env[name] ?? null, names: Object.keys(process.env) }) }),
    'odd-code': defineAction({ description: 'Throws a ToolError with a code ToolError does not have', level: 1,
      input: z.object({}), handler: () => { throw new ToolError('teapot', 'I am a teapot'); } }),
    'context-info': defineAction({ description: 'Echoes what the context holds', level: 1,
      input: z.object({ text: z.string().default('none') }),
      handler: async (args, ctx) => {
        ctx.logger.info({ text: args.text }, 'context-info ran');
        return { args, ctxArgs: ctx.args, conversationId: ctx.conversationId, toolName: ctx.toolName,
          action: ctx.action, exportDir: ctx.exportDir, listed: (await ctx.sharedContext.listResources()).length };
      } }),
  },
});
`;

/** Writes, drops a marker file so a test knows the spin has begun, then never yields. */
export function spinToolModule(markerDir: string): string {
  return `const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'spin-tool', version: '1.0.0', description: 'Spins after a write',
  actions: {
    'write-then-spin': defineAction({ description: 'Writes, then spins forever', level: 2,
      input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => {
        await ctx.sharedContext.createResource(name, { half: true });
        writeFileSync(join(${JSON.stringify(markerDir)}, name), 'spinning');
        while (true) {}
      } }),
    'ping': defineAction({ description: 'Answers', level: 1, input: z.object({}), handler: () => ({ pong: true }) }),
    'crash': defineAction({ description: 'Ends its worker thread', level: 1, input: z.object({}),
      handler: () => process.exit(3) }),
  },
});
`;
}

/** A TypeScript module: under jest it must load through the worker's own TypeScript loader. */
export const TS_TOOL = `import type { ToolSdk } from ${JSON.stringify(join(__dirname, '..', '..', 'src', 'core', 'tool-interface'))};
const double = (n: number): number => n * 2;
export default ({ defineTool, defineAction, z }: ToolSdk) =>
  defineTool({
    name: 'typed-tool', version: '1.0.0', description: 'Written in TypeScript',
    actions: {
      'double-it': defineAction({ description: 'Doubles', level: 1, input: z.object({ n: z.number() }),
        handler: ({ n }: { n: number }) => ({ doubled: double(n) }) }),
    },
  });
`;

export const SPIN_AT_LOAD = `while (true) {}\n`;
export const THROW_AT_LOAD = `throw new Error('boom while loading');\n`;

/** A fresh directory holding the given files. */
export function toolsDirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'isolation-tools-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Polls for a file with a bounded deadline: how a test learns that a worker reached a point. */
export async function waitForFile(file: string, deadlineMs = 15_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!existsSync(file)) {
    if (Date.now() > end) throw new Error(`${file} did not appear within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
