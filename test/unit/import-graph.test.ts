/**
 * No import cycle anywhere in src/ and tools/: every relative import (type-only
 * ones too, since a type cycle ties the files as tightly as a value cycle) is
 * resolved with the TypeScript compiler's own resolver, and the graph must have
 * no strongly connected component larger than one file, nor a self-import.
 * And test/ imports nothing from bench/ (the benchmarks may use test support).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const SCANNED = ['src', 'tools'];
const SKIPPED = [path.join(ROOT, 'src', 'generated')];

function sourceFiles(dir: string): string[] {
  if (SKIPPED.includes(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(full);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [full] : [];
  });
}

/**
 * File → the project files it imports (relative to ROOT), by the compiler's
 * module resolution: the files under `scanned`, their imports of files under `targetsIn`.
 */
function importGraph(scanned = SCANNED, targetsIn = SCANNED): Map<string, string[]> {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
  };
  const files = scanned.flatMap((d) => sourceFiles(path.join(ROOT, d)));
  const inGraph = new Set(targetsIn.flatMap((d) => sourceFiles(path.join(ROOT, d))));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(ts.sys.readFile(file) ?? '', true, true);
    const targets = new Set<string>();
    for (const ref of info.importedFiles) {
      const resolved = ts.resolveModuleName(ref.fileName, file, options, ts.sys).resolvedModule;
      if (resolved && inGraph.has(resolved.resolvedFileName)) targets.add(resolved.resolvedFileName);
    }
    graph.set(path.relative(ROOT, file), [...targets].map((t) => path.relative(ROOT, t)).sort());
  }
  return graph;
}

/** Tarjan's strongly connected components; each cyclic one as a cycle path through it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(cycleThrough(graph, new Set(component)));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One concrete cycle inside a strongly connected component: a shortest path back to its first file. */
function cycleThrough(graph: Map<string, string[]>, component: Set<string>): string[] {
  const start = [...component].sort()[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const back: string[] = [];
        for (let u: string | undefined = v; u !== undefined; u = from.get(u)) back.push(u);
        return [...back.reverse(), start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...component];
}

describe('import graph', () => {
  const graph = importGraph();

  it('is read from the real files (the entry points and their imports are there)', () => {
    expect(graph.get(path.join('src', 'app.ts'))).toEqual(expect.arrayContaining([path.join('src', 'services.ts')]));
    expect(graph.size).toBeGreaterThan(50);
  });

  it('of src/ and tools/ has no cycle', () => {
    const found = cycles(graph).map((c) => c.join(' → '));
    expect(found).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself works)', () => {
    const withCycle = new Map(graph);
    withCycle.set('a.ts', ['b.ts']);
    withCycle.set('b.ts', ['c.ts']);
    withCycle.set('c.ts', ['a.ts']);
    expect(cycles(withCycle)).toContainEqual(['a.ts', 'b.ts', 'c.ts', 'a.ts']);
  });

  it('test/ imports nothing from bench/ (the benchmarks may import test support, not the reverse)', () => {
    const fromTests = importGraph(['test'], ['bench']);
    const reaches = [...fromTests]
      .filter(([, targets]) => targets.length > 0)
      .map(([file, t]) => `${file} → ${t.join(', ')}`);
    expect(reaches).toEqual([]);
    expect(importGraph(['bench'], ['test']).get(path.join('bench', 'http-bench.ts'))).toContain(
      path.join('test', 'support', 'free-port.ts'),
    );
  });
});
