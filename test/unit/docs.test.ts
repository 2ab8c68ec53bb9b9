/**
 * The README and docs/ as a newcomer reads them: the README stays a front
 * page, every link between the pages lands on a file and a heading that
 * exist, and the configuration reference lists exactly the variables the
 * service validates at boot (src/config.ts), so neither can drift alone.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ZConfig } from '../../src/config';

const root = resolve(__dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (page: string): string => readFileSync(join(root, page), 'utf8');

/** Markdown outside fenced code blocks (code may hold anything that looks like a link). */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(page: string): Set<string> {
  const headings = [...prose(read(page)).matchAll(/^#{1,6} +(.+)$/gm)].map((m) => slug(m[1] ?? ''));
  return new Set(headings);
}

describe('README and docs/', () => {
  it('the README is a front page of at most 150 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(150);
  });

  it('the README links every page of docs/', () => {
    const readme = read('README.md');
    for (const page of pages.filter((p) => p.startsWith('docs/'))) expect(readme).toContain(`](${page})`);
  });

  it.each(pages)('every relative link of %s lands on a file and a heading that exist', (page) => {
    const broken: string[] = [];
    for (const [, target = ''] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue; // http(s), mailto: not checked here
      const [file = '', anchor] = target.split('#');
      const path = file === '' ? page : relative(root, resolve(join(root, dirname(page)), file));
      if (!existsSync(join(root, path))) {
        broken.push(`${target}: no file ${path}`);
        continue;
      }
      if (anchor !== undefined && path.endsWith('.md') && !anchors(path).has(anchor)) {
        broken.push(`${target}: no heading #${anchor} in ${path}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('docs/CONFIGURATION.md lists exactly the variables src/config.ts validates (and OpenTelemetry’s)', () => {
    const rows = read('docs/CONFIGURATION.md')
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    const documented = new Set(
      rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_*]*)`/g)].map((m) => m[1] ?? '')),
    );
    const validated = Object.keys(ZConfig.shape);
    expect(validated.filter((name) => !documented.has(name))).toEqual([]);
    // Only OpenTelemetry's standard variables are read elsewhere (by its SDK, src/observability).
    expect([...documented].filter((name) => !validated.includes(name) && !name.startsWith('OTEL_'))).toEqual([]);
  });
});
