/**
 * The directory of package.json, where openapi/ and prisma/ are: the same from
 * src/ (tsx, jest) and from dist/src/ (node). Its own module so that the app
 * (openapi/openapi.json) and the migrator (prisma/) both read it without the
 * app depending on the migrator.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const PROJECT_ROOT = findProjectRoot(__dirname);

function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`No package.json above ${from}`);
  }
}
