/**
 * Seed 002's four coordination patterns and its "Testing Multi-Tool
 * Workflows" example, driven over HTTP through negotiate (API.md).
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

type Body = Record<string, unknown>;

function negotiate(conversationId: string, action: string, args?: Body, extra: Body = {}): supertest.Test {
  return request(t.app)
    .post(`/conversations/${conversationId}/negotiate`)
    .send({ action, ...(args === undefined ? {} : { args }), ...extra });
}

/** A successful negotiate: 200, success true, and the body for further checks. */
async function ok(
  conversationId: string,
  action: string,
  args?: Body,
  extra: Body = {},
): Promise<supertest.Response['body']> {
  const res = await negotiate(conversationId, action, args, extra);
  expect({ status: res.status, success: res.body.success, code: res.body.code }).toEqual({
    status: 200,
    success: true,
    code: undefined,
  });
  return res.body;
}

/** The first value under `key` anywhere in `value` (API.md names the statistics, not where they sit). */
function deepFind(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  if (!Array.isArray(value) && Object.hasOwn(value, key)) return (value as Body)[key];
  for (const v of Object.values(value as Body)) {
    const found = deepFind(v, key);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The export text: the output itself, or its longest string member. */
function exportText(output: unknown): string {
  if (typeof output === 'string') return output;
  const strings = Object.values(output as Body).filter((v): v is string => typeof v === 'string');
  expect(strings.length).toBeGreaterThan(0);
  return strings.sort((a, b) => b.length - a.length)[0]!;
}

async function levels(conversationId: string): Promise<Record<string, number>> {
  const res = await request(t.app).get(`/conversations/${conversationId}/permissions`);
  expect(res.status).toBe(200);
  return Object.fromEntries((res.body.tools as { tool: string; level: number }[]).map((p) => [p.tool, p.level]));
}

describe('Pattern 1: resource producer-consumer', () => {
  it('data-tool produces (level 2), analytics-tool and data-tool consume (level 1)', async () => {
    const c = uniqueId('seed');
    // The producer needs write permission.
    const denied = await negotiate(c, 'create-resource', { name: 'user-data', data: { userId: 123, name: 'Alice' } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('permission_required');

    await ok(c, 'upgrade:data-tool:level-2');
    const created = await ok(c, 'create-resource', { name: 'user-data', data: { userId: 123, name: 'Alice' } });
    expect(created.routing).toMatchObject({ tool: 'data-tool', action: 'create-resource' });
    expect(created.output.message).toBe('Resource created by data-tool');
    expect(created.output.resource).toMatchObject({ name: 'user-data', createdBy: 'data-tool', version: 1 });

    // The consumers only need read permission: no upgrade for them.
    const read = await ok(c, 'read-resource', { name: 'user-data' });
    expect(read.alignment).toBe('aligned');
    expect(read.output).toMatchObject({
      name: 'user-data',
      data: { userId: 123, name: 'Alice' },
      createdBy: 'data-tool',
    });

    const summary = await ok(c, 'summarize-resource', { name: 'user-data' });
    expect(summary.routing).toMatchObject({ tool: 'analytics-tool', action: 'summarize-resource' });
    expect(summary.alignment).toBe('aligned');
    expect(summary.output).toBeDefined();

    // Resources persist in conversation state.
    const state = await request(t.app).get(`/conversations/${c}/state`).expect(200);
    expect(state.body.sharedContext.resources).toEqual([
      expect.objectContaining({ name: 'user-data', data: { userId: 123, name: 'Alice' }, createdBy: 'data-tool' }),
    ]);
    expect((await levels(c))['analytics-tool']).toBe(1);
  });

  it('analytics-tool computes numeric stats of what data-tool produced', async () => {
    const c = uniqueId('seed');
    await ok(c, 'upgrade:data-tool:level-2');
    await ok(c, 'create-resource', { name: 'scores', data: [3, 1, 2, 6] });
    const summary = await ok(c, 'summarize-resource', { name: 'scores' });
    expect([
      deepFind(summary.output, 'min'),
      deepFind(summary.output, 'max'),
      deepFind(summary.output, 'mean'),
    ]).toEqual([1, 6, 3]);

    await ok(c, 'create-resource', { name: 'orders', data: [{ total: 10 }, { total: 30 }, { other: 1 }] });
    const byField = await ok(c, 'summarize-resource', { name: 'orders', field: 'total' });
    expect([
      deepFind(byField.output, 'min'),
      deepFind(byField.output, 'max'),
      deepFind(byField.output, 'mean'),
    ]).toEqual([10, 30, 20]);

    const count = await ok(c, 'count-resources', {});
    expect(count.routing).toMatchObject({ tool: 'analytics-tool', action: 'count-resources' });
    expect(deepFind(count.output, 'count')).toBe(2);
    expect(deepFind((await ok(c, 'count-resources', { prefix: 'sc' })).output, 'count')).toBe(1);
  });
});

describe('Pattern 2: pipeline coordination', () => {
  it('data-tool creates, transform-tool transforms, export-tool exports; ownership and version track each tool', async () => {
    const c = uniqueId('seed');
    await ok(c, 'upgrade:data-tool:level-2');
    await ok(c, 'upgrade:transform-tool:level-2');

    const created = await ok(c, 'create-resource', { name: 'pipeline-data', data: { raw: [3, 1, 2, 3] } });
    expect(created.output.resource).toMatchObject({ createdBy: 'data-tool', updatedBy: 'data-tool', version: 1 });

    const sorted = await ok(c, 'transform-resource', { name: 'pipeline-data', operation: 'sort', field: 'raw' });
    expect(sorted.routing).toMatchObject({ tool: 'transform-tool', action: 'transform-resource' });
    expect(sorted.alignment).toBe('agnostic');

    const afterSort = (await ok(c, 'read-resource', { name: 'pipeline-data' })).output;
    expect(afterSort).toMatchObject({
      data: { raw: [1, 2, 3, 3] },
      createdBy: 'data-tool',
      updatedBy: 'transform-tool',
      version: 2,
    });
    expect(afterSort.updatedAt).toBeGreaterThanOrEqual(afterSort.createdAt);

    // A second step writes to a new resource, which transform-tool then owns.
    await ok(c, 'transform-resource', {
      name: 'pipeline-data',
      operation: 'unique',
      field: 'raw',
      target: 'pipeline-unique',
    });
    const unique = (await ok(c, 'read-resource', { name: 'pipeline-unique' })).output;
    expect(unique).toMatchObject({
      data: [1, 2, 3],
      createdBy: 'transform-tool',
      updatedBy: 'transform-tool',
      version: 1,
    });
    // The source is untouched by a step that writes elsewhere.
    expect((await ok(c, 'read-resource', { name: 'pipeline-data' })).output.version).toBe(2);

    // data-tool enriches it further (seed: update-resource), then export-tool reads the final data.
    const enriched = await ok(c, 'update-resource', {
      name: 'pipeline-data',
      data: { raw: [1, 2, 3, 3], transformed: [1, 2, 3] },
    });
    expect(enriched.output).toMatchObject({ createdBy: 'data-tool', updatedBy: 'data-tool', version: 3 });

    const json = await ok(c, 'export-resource', { name: 'pipeline-data', format: 'json' });
    expect(json.routing).toMatchObject({ tool: 'export-tool', action: 'export-resource' });
    expect(json.alignment).toBe('aligned');
    expect(JSON.parse(exportText(json.output))).toEqual({ raw: [1, 2, 3, 3], transformed: [1, 2, 3] });

    const csv = await ok(c, 'export-resource', { name: 'pipeline-unique', format: 'csv' });
    const lines = exportText(csv.output)
      .split(/\r?\n/)
      .filter((l) => l !== '');
    expect(lines.slice(-3)).toEqual(['1', '2', '3']);
    expect(lines.length).toBeLessThanOrEqual(4); // at most a header line before the values

    // Exporting reads: it changes neither version nor owner.
    const final = (await ok(c, 'read-resource', { name: 'pipeline-data' })).output;
    expect(final).toMatchObject({ createdBy: 'data-tool', updatedBy: 'data-tool', version: 3 });
  });
});

describe('Pattern 3: capability composition', () => {
  it('greet, create-resource and list-resources route to the right tools without naming them', async () => {
    const c = uniqueId('seed');
    await ok(c, 'upgrade:data-tool:level-2');

    const greet = await ok(c, 'greet');
    expect(greet.routing).toEqual({ tool: 'example-tool', action: 'greet', confidence: 1, explicit: false });
    expect(greet.output.message).toContain('world');

    const create = await ok(c, 'create-resource', { name: 'composed', data: { from: 'composition' } });
    expect(create.routing).toEqual({ tool: 'data-tool', action: 'create-resource', confidence: 1, explicit: false });

    const list = await ok(c, 'list-resources');
    expect(list.routing).toEqual({ tool: 'data-tool', action: 'list-resources', confidence: 1, explicit: false });
    expect(list.output.resources).toEqual([
      expect.objectContaining({ name: 'composed', data: { from: 'composition' } }),
    ]);

    const summary = await ok(c, 'summarize-resource', { name: 'composed' });
    expect(summary.routing).toEqual({
      tool: 'analytics-tool',
      action: 'summarize-resource',
      confidence: 1,
      explicit: false,
    });
    const exported = await ok(c, 'export-resource', { name: 'composed', format: 'csv' });
    expect(exported.routing).toEqual({
      tool: 'export-tool',
      action: 'export-resource',
      confidence: 1,
      explicit: false,
    });
  });
});

describe('Pattern 4: permission isolation', () => {
  it('upgrading data-tool leaves example-tool and transform-tool where they were', async () => {
    const c = uniqueId('seed');
    await ok(c, 'greet');
    const before = await levels(c);
    expect(before).toMatchObject({ 'data-tool': 1, 'example-tool': 1, 'transform-tool': 1 });

    const up = await ok(c, 'upgrade:data-tool:level-2');
    expect(up.output).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });

    // data-tool can now write.
    await ok(c, 'create-resource', { name: 'iso', data: ['b', 'a'] });
    // example-tool still at read level, and works without upgrade.
    await ok(c, 'greet');
    // transform-tool was not upgraded with it.
    const transform = await negotiate(c, 'transform-resource', { name: 'iso', operation: 'sort' });
    expect(transform.status).toBe(403);
    expect(transform.body.code).toBe('permission_required');
    expect(transform.body.approvalReason).toContain('transform-tool');

    const after = await levels(c);
    expect(after).toEqual({ ...before, 'data-tool': 2 });

    // Only data-tool's change is in the history.
    const history = await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200);
    expect(history.body.events).toEqual([expect.objectContaining({ tool: 'data-tool', fromLevel: 1, toLevel: 2 })]);
  });

  it('levels are per conversation: an upgrade in one does not leak into another', async () => {
    const a = uniqueId('seed');
    const b = uniqueId('seed');
    await ok(a, 'upgrade:data-tool:level-2');
    await ok(a, 'create-resource', { name: 'x', data: 1 });
    const other = await negotiate(b, 'create-resource', { name: 'x', data: 1 });
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('permission_required');
    // And resources are per conversation too.
    const read = await negotiate(b, 'read-resource', { name: 'x' });
    expect(read.status).toBe(404);
    expect(read.body.code).toBe('resource_not_found');
  });
});

describe('Testing Multi-Tool Workflows (the seed example)', () => {
  it('upgrade, create, read back value 42', async () => {
    const conversationId = uniqueId('test-conversation');

    // Upgrade permissions
    await ok(conversationId, 'upgrade:data-tool:level-2', {});

    // Execute coordinated workflow
    const result1 = await ok(conversationId, 'create-resource', { name: 'test-data', data: { value: 42 } });
    const result2 = await ok(conversationId, 'read-resource', { name: 'test-data' });

    // Verify results
    expect(result1.success).toBe(true);
    expect(result2.success).toBe(true);
    expect(result2.output.data.value).toBe(42);
  });
});
