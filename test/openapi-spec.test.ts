/**
 * The committed openapi/openapi.json must be what tsoa generates from the
 * controllers now: a stale spec fails the test command.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './support/db-server';

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
  const fresh = readFileSync(join(out, 'openapi.json'), 'utf8');
  const committed = readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8');
  // Compared as text, as /openapi.json serves it; `npm run generate` rewrites it.
  expect(committed).toBe(fresh);
}, 120000);
