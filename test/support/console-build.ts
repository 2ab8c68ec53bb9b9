/**
 * The console's build for the tests that serve it: built once (Vite, about a
 * second) when dist/console is missing or older than a file under console/.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CONSOLE_BUILD_DIR } from '../../src/http/console';
import { PROJECT_ROOT } from '../../src/project-root';

function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

export function ensureConsoleBuilt(): void {
  const index = join(CONSOLE_BUILD_DIR, 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newestSource(join(PROJECT_ROOT, 'console'))) return;
  const vite = join(PROJECT_ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const built = spawnSync(
    process.execPath,
    [vite, 'build', '--config', join(PROJECT_ROOT, 'console', 'vite.config.mts')],
    {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      env: { ...process.env, VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' },
    },
  );
  if (built.status !== 0) throw new Error(`vite build of the console failed:\n${built.stdout}\n${built.stderr}`);
}
