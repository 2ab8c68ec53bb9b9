/**
 * The committed openapi/openapi.json must be what tsoa generates from the
 * controllers now, finished by scripts/openapi-finish.mjs (as `npm run
 * generate` does): a stale spec fails the test command. And its examples must
 * tell the truth about statuses and media types.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './support/db-server';
import { NEGOTIATION_STATUS } from '../src/http/negotiate-status';
import { PROBLEM_STATUS } from '../src/http/problem';

it('openapi/openapi.json is up to date with the controllers', async () => {
  const out = mkdtempSync(join(tmpdir(), 'spec-'));
  const config = JSON.parse(readFileSync(join(ROOT, 'tsoa.json'), 'utf8')) as { spec: Record<string, unknown> };
  config.spec.outputDirectory = out;
  const configPath = join(out, 'tsoa.json');
  writeFileSync(configPath, JSON.stringify(config));
  const status = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [require.resolve('tsoa/dist/cli.js'), 'spec', '-c', configPath], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('close', resolve);
  });
  expect(status).toBe(0);
  const { finishSpec } = await import('../scripts/openapi-finish.mjs');
  const fresh = finishSpec(readFileSync(join(out, 'openapi.json'), 'utf8'));
  const committed = readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8');
  // Compared as text, as /openapi.json serves it; `npm run generate` rewrites it.
  expect(committed).toBe(fresh);
}, 120000);

interface Media {
  schema?: { $ref?: string };
  examples?: Record<string, { value: { success?: boolean; code?: string; status?: number; type?: string } }>;
}
type Operation = { responses: Record<string, { content?: Record<string, Media> }> };
const spec = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const operations = Object.entries(spec.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
);

it("no text of the spec holds $` or $' (swagger-ui-express splices the spec into /docs with String.replace, where those are patterns: the page would not load)", () => {
  const text = readFileSync(join(__dirname, '..', 'openapi', 'openapi.json'), 'utf8');
  expect(text.match(/\$[`']/g) ?? []).toEqual([]);
});

it('every error response is typed application/problem+json with Problem examples of its own status, except negotiate outcomes', () => {
  const wrong: string[] = [];
  for (const { name, op } of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const problem = media.schema?.$ref === '#/components/schemas/Problem';
        if (problem !== (type === 'application/problem+json')) wrong.push(`${name} ${status} ${type}`);
        if (!problem) continue;
        const examples = Object.values(media.examples ?? {});
        if (examples.length === 0) wrong.push(`${name} ${status}: no example`);
        for (const { value } of examples) {
          if (
            value.status !== Number(status) ||
            PROBLEM_STATUS[value.code as keyof typeof PROBLEM_STATUS] !== value.status
          )
            wrong.push(`${name} ${status}: example ${value.code} says ${value.status}`);
          if (value.type !== `urn:problem:${value.code}`) wrong.push(`${name} ${status}: example type ${value.type}`);
        }
      }
    }
  }
  expect(wrong).toEqual([]);
});

it("negotiate's examples cover every outcome of API.md's table, each under its own status and with the right success flag", () => {
  const op = spec.paths['/conversations/{conversationId}/negotiate']!.post!;
  const seen: string[] = [];
  for (const [status, response] of Object.entries(op.responses)) {
    const media = response.content?.['application/json'];
    if (!media) continue;
    expect(media.schema?.$ref).toBe('#/components/schemas/NegotiationResult');
    for (const { value } of Object.values(media.examples ?? {})) {
      if (status === '200') {
        expect(value).toMatchObject({ success: true });
        expect(value.code).toBeUndefined();
        seen.push('success');
      } else {
        expect(value.success).toBe(false);
        expect(NEGOTIATION_STATUS[value.code as keyof typeof NEGOTIATION_STATUS]).toBe(Number(status));
        seen.push(value.code!);
      }
    }
  }
  expect(seen).toEqual(
    expect.arrayContaining([
      'success',
      'invalid_args',
      'no_tool',
      'unknown_tool',
      'ambiguous_action',
      'permission_required',
      'denied',
      'resource_not_found',
      'resource_exists',
      'resource_too_large',
      'tool_error',
    ]),
  );
  // Database unreachable: a problem+json 503.
  expect(op.responses['503']?.content?.['application/problem+json']?.examples?.unavailable?.value.code).toBe(
    'unavailable',
  );
});

it('every operation has a summary, a description and an operationId, and schema names are plain identifiers', () => {
  const missing = operations.flatMap(({ name, op }) => {
    const o = op as Operation & { summary?: string; description?: string; operationId?: string };
    return [
      o.summary ? [] : [`${name} summary`],
      o.description ? [] : [`${name} description`],
      o.operationId ? [] : [`${name} operationId`],
    ].flat();
  });
  expect(missing).toEqual([]);
  const schemas = Object.keys(
    (JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as { components: { schemas: object } })
      .components.schemas,
  );
  expect(schemas.filter((n) => !/^[A-Za-z][A-Za-z0-9]*$/.test(n))).toEqual([]);
});
