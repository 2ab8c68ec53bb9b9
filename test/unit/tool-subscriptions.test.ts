/**
 * ToolDefinition.on as the registry loads it (src/core/tool-subscriptions.ts):
 * the globs over resource names, and a declaration that does not hold
 * (an unknown event type, a bad level or glob) skips the module with a reason.
 */
import { loadToolModule, SkipModule } from '../../src/core/tool-module';
import { globMatch } from '../../src/core/tool-subscriptions';
import { scratchDir } from '../support/scratch-dir';

describe('globMatch', () => {
  it.each([
    ['raw-*', 'raw-orders', true],
    ['raw-*', 'raw-', true],
    ['raw-*', 'xraw-orders', false],
    ['*-log', 'audit-log', true],
    ['a*b*c', 'a-x-b-y-c', true],
    ['a*b*c', 'a-x-c', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
    ['v1.0', 'v1x0', false],
  ])('%s against %s: %s', (glob, name, expected) => {
    expect(globMatch(glob, name)).toBe(expected);
  });
});

describe('loading `on`', () => {
  const dir = scratchDir('tool-subscriptions');
  afterAll(() => dir.remove());
  const tool = (on: string): string => `module.exports = ({ defineTool, z }) => defineTool({
    name: 'subs-tool', version: '1.0.0', description: 'd',
    actions: { noop: { description: 'n', level: 1, input: z.object({}), handler: () => ({}) } },
    on: ${on},
  });`;

  it('keeps each handler with its type, names and level', async () => {
    const file = dir.write('ok.js', tool(`{ 'resource.updated': { names: ['raw-*'], level: 2, handler: () => 1 } }`));
    const loaded = await loadToolModule(file);
    expect(loaded.subscriptions).toEqual([
      { type: 'resource.updated', names: ['raw-*'], level: 2, handler: expect.any(Function) as unknown },
    ]);
  });

  it.each([
    ['an unknown event type', `{ 'resource.renamed': { level: 2, handler: () => 1 } }`],
    ['a level out of range', `{ 'resource.created': { level: 4, handler: () => 1 } }`],
    ['a glob that is no resource name', `{ 'resource.created': { names: ['a/b*'], level: 2, handler: () => 1 } }`],
    ['no handler', `{ 'resource.created': { level: 2 } }`],
  ])('skips the module for %s', async (_what, on) => {
    const file = dir.write(`bad-${Math.random().toString(36).slice(2)}.js`, tool(on));
    await expect(loadToolModule(file)).rejects.toBeInstanceOf(SkipModule);
  });
});
