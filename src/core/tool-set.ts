/** One generation of the registry's tools (src/core/tool-registry.ts), immutable once published. */
import { dependencyEdges, type DependencyEdge } from './tool-dependencies';
import { byName, type LoadedAction, type LoadedTool } from './tool-module';

export interface ToolSet {
  readonly generation: number;
  /** Sorted by name. */
  readonly tools: readonly LoadedTool[];
  readonly byName: ReadonlyMap<string, LoadedTool>;
  /** Every action of every tool, in tool order then action order. */
  readonly actions: readonly LoadedAction[];
  /** The dependency graph of the actions' contracts (GET /tools/graph, src/core/tool-dependencies.ts). */
  readonly edges: readonly DependencyEdge[];
}

export function makeToolSet(generation: number, tools: LoadedTool[]): ToolSet {
  const sorted = Object.freeze([...tools].sort(byName));
  const actions = Object.freeze(sorted.flatMap((t) => t.actions));
  return Object.freeze({
    generation,
    tools: sorted,
    byName: new Map(sorted.map((t) => [t.name, t] as const)),
    actions,
    edges: Object.freeze(dependencyEdges(actions)),
  });
}
