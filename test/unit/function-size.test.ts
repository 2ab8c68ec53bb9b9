/**
 * Functions short enough to read in one screen, called with few enough
 * values to keep apart (docs/ARCHITECTURE.md, STYLE.md): every function,
 * method, constructor and arrow function with a body in src/ and tools/ is at
 * most MAX_LINES lines, from its first token after any decorator to its
 * closing brace, and takes at most MAX_PARAMS positional parameters (a call
 * object where many values travel together). A parameter with a decorator is
 * not counted: tsoa binds each HTTP input (@Path, @Query, @Header, @Body) to
 * a parameter of its own, so a controller method cannot take them as one object.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const SCANNED = ['src', 'tools'];
const SKIPPED = [path.join(ROOT, 'src', 'generated')];
const MAX_LINES = 60;
const MAX_PARAMS = 5;

/**
 * Composition roots not split yet (`file:function`), each over a limit: the entry file and the wiring,
 * which the participants work extends at the same time. An entry that comes within the limits must go.
 */
const NOT_YET: Record<string, string> = {
  'src/server.ts:main': 'the entry file: reads the config, wires, listens, waits for the database',
  'src/server.ts:installShutdown': 'six values of the entry file',
  'src/bootstrap.ts:wireServices': 'builds every service; its test overrides are three positional options',
};

interface Measured {
  where: string;
  key: string;
  lines: number;
  params: number;
}

function sourceFiles(dir: string): string[] {
  if (SKIPPED.includes(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(full);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [full] : [];
  });
}

function nameOf(fn: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(fn)) return 'constructor';
  if (fn.name) return fn.name.getText(sf);
  const parent = fn.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText(sf);
  }
  return '(anonymous)';
}

/** Where the function starts, after its decorators (which belong to the framework, not to its length). */
function startOf(fn: ts.FunctionLikeDeclaration, sf: ts.SourceFile): number {
  const first = ts.canHaveModifiers(fn) ? ts.getModifiers(fn)?.[0] : undefined;
  return (first ?? fn.name ?? fn).getStart(sf);
}

function measure(file: string): Measured[] {
  const sf = ts.createSourceFile(file, ts.sys.readFile(file) ?? '', ts.ScriptTarget.Latest, true);
  const rel = path.relative(ROOT, file).split(path.sep).join('/');
  const found: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node;
      const start = sf.getLineAndCharacterOfPosition(startOf(fn, sf)).line;
      const end = sf.getLineAndCharacterOfPosition(fn.end).line;
      const params = fn.parameters.filter(
        (p) => !ts.getDecorators(p)?.length && !(ts.isIdentifier(p.name) && p.name.text === 'this'),
      ).length;
      found.push({ where: `${rel}:${start + 1}`, key: `${rel}:${nameOf(fn, sf)}`, lines: end - start + 1, params });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

const measured = SCANNED.flatMap((d) => sourceFiles(path.join(ROOT, d))).flatMap(measure);
const over = (m: Measured): boolean => m.lines > MAX_LINES || m.params > MAX_PARAMS;

it('finds the functions it measures (the scan itself works)', () => {
  expect(measured.length).toBeGreaterThan(500);
  expect(measured.some((m) => m.key === 'src/core/conversation-manager.ts:negotiate')).toBe(true);
});

it(`every function is at most ${MAX_LINES} lines and takes at most ${MAX_PARAMS} positional parameters`, () => {
  const offenders = measured
    .filter((m) => over(m) && !(m.key in NOT_YET))
    .map((m) => `${m.where} ${m.key.split(':')[1]}: ${m.lines} lines, ${m.params} parameters`);
  expect(offenders).toEqual([]);
});

it('lists as not yet split only functions still over a limit', () => {
  const stillOver = new Set(measured.filter(over).map((m) => m.key));
  expect(Object.keys(NOT_YET).filter((key) => !stillOver.has(key))).toEqual([]);
});
