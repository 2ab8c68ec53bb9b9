/**
 * The rules of tool dependencies (src/core/tool-dependencies.ts): how
 * patterns meet, which declarations load, which edges the graph draws and
 * which cycles refuse tools, and what a call's requires and produces check.
 */
import { z } from 'zod';
import {
  ContractViolation,
  dependencyEdges,
  loadContracts,
  patternsMeet,
  productCheck,
  refuseCycles,
  requiredNames,
  unmetRequirements,
  type ContractAction,
} from '../../src/core/tool-dependencies';

const INPUT = { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } };

function action(qualifiedName: string, contracts: Parameters<typeof loadContracts>[0]): ContractAction {
  const [tool] = qualifiedName.split('/');
  return { tool: tool!, qualifiedName, inputSchema: INPUT, ...loadContracts(contracts, INPUT, qualifiedName) };
}

describe('patterns', () => {
  it.each([
    ['report-*', 'report-*', true],
    ['report-*', 'report-2024', true],
    ['*', 'anything', true],
    ['a-*', '*-b', true],
    ['report-*', 'sales-*', false],
    ['sales-q1', 'sales-q2', false],
  ])('%s meets %s: %s', (a, b, meets) => {
    expect(patternsMeet(a, b)).toBe(meets);
    expect(patternsMeet(b, a)).toBe(meets);
  });

  it('refuses placeholders that name no arg, names outside the alphabet and bad createdBy', () => {
    expect(() => loadContracts({ requires: [{ resource: 'x-{nope}' }] }, INPUT, 'a')).toThrow(/\{nope\} names no arg/);
    expect(() => loadContracts({ produces: [{ resource: 'a/b' }] }, INPUT, 'a')).toThrow(/not a resource name/);
    expect(() => loadContracts({ requires: [{ resource: 'x', createdBy: 'Data Tool' }] }, INPUT, 'a')).toThrow(
      /createdBy/,
    );
  });
});

describe('the graph', () => {
  const maker = action('data/make', { produces: [{ resource: '{name}' }] });
  const step = action('pipe/step', { requires: [{ resource: '{name}' }], produces: [{ resource: '{id}' }] });
  const report = action('rep/build', {
    requires: [{ resource: 'sales-{id}' }],
    produces: [{ resource: 'report-{id}' }],
  });

  it('draws producer → consumer edges, none from an action to itself', () => {
    const edges = dependencyEdges([maker, step, report]);
    expect(edges).toContainEqual({ from: 'data/make', to: 'rep/build', resource: 'sales-{id}' });
    expect(edges).toContainEqual({ from: 'rep/build', to: 'pipe/step', resource: '{name}' });
    expect(edges.filter((e) => e.from === e.to)).toEqual([]);
  });

  it('refuses a cycle of specific patterns (the non-kept tools), never one through a generic pattern', () => {
    const a = {
      name: 'a',
      actions: [action('a/x', { requires: [{ resource: 'b-out' }], produces: [{ resource: 'a-out' }] })],
    };
    const b = {
      name: 'b',
      actions: [action('b/y', { requires: [{ resource: 'a-out' }], produces: [{ resource: 'b-out' }] })],
    };
    const generic = { name: 'pipe', actions: [step] };
    const rep = { name: 'rep', actions: [report] };
    const result = refuseCycles([a, b, generic, rep], (t) => t.name === 'a');
    expect(result.refused.map((r) => r.tool.name)).toEqual(['b']);
    expect(result.refused[0]!.reason).toContain('(a/x, b/y)');
    expect(result.kept.map((t) => t.name)).toEqual(['a', 'pipe', 'rep']);
  });
});

describe('a call', () => {
  const build = action('rep/build', {
    requires: [{ resource: 'sales-{id}', createdBy: 'data-tool', schema: z.object({ n: z.number() }) }],
    produces: [{ resource: 'report-{id}', schema: z.object({ total: z.number() }) }],
  });
  const maker = action('data-tool/make', { produces: [{ resource: '{name}' }] });

  it('asks for the filled names, data only where a schema needs it; skips an absent arg', () => {
    expect(requiredNames(build, { id: 'q1' })).toEqual({ names: ['sales-q1'], withData: ['sales-q1'] });
    expect(requiredNames(build, {})).toBeUndefined();
    expect(requiredNames(build, { id: 'not a name' })).toBeUndefined();
  });

  it('reports absent, created_by and schema, with producers', () => {
    const all = [build, maker];
    const check = (found: Parameters<typeof unmetRequirements>[2]) =>
      unmetRequirements(build, { id: 'q1' }, found, all);
    expect(check([])).toEqual([{ resource: 'sales-q1', producers: ['data-tool/make'], reason: 'absent' }]);
    expect(check([{ name: 'sales-q1', createdBy: 'client', data: { n: 1 } }])[0]?.reason).toBe('created_by');
    expect(check([{ name: 'sales-q1', createdBy: 'data-tool', data: { n: 'x' } }])[0]?.reason).toBe('schema');
    expect(check([{ name: 'sales-q1', createdBy: 'data-tool', data: { n: 1 } }])).toEqual([]);
  });

  it('checks a write of a produced name against its schema, and only that name', () => {
    const writes = productCheck(build, { id: 'q1' })!;
    expect(() => writes('report-q1', { total: 'x' })).toThrow(ContractViolation);
    expect(() => writes('report-q1', { total: 1 })).not.toThrow();
    expect(() => writes('other', { total: 'x' })).not.toThrow();
    expect(productCheck(maker, {})).toBeUndefined();
  });
});
