/**
 * The order the tools' coordination contracts impose (API.md, "Tool
 * dependencies"), in words for a model: which action needs which resource
 * first, and which actions produce it. Shared by the system prompt and the
 * `list-tools` special action, from the tool set's dependency graph.
 */
import type { LoadedAction, ToolSet } from '../tool-registry';

/**
 * One sentence per requirement of the `shown` actions, e.g.
 * "'transform-tool/transform-resource' needs resource `{name}` first, from
 * 'data-tool/create-resource' or 'data-tool/update-resource'". Producers the
 * caller is not shown are left out.
 */
export function dependencyOrder(set: Pick<ToolSet, 'edges'>, shown: readonly LoadedAction[]): string[] {
  const visible = new Set(shown.map((a) => a.qualifiedName));
  const lines: string[] = [];
  for (const a of shown) {
    for (const r of a.requires ?? []) {
      const producers = set.edges
        .filter((e) => e.to === a.qualifiedName && e.resource === r.resource && visible.has(e.from))
        .map((e) => `'${e.from}'`);
      const by = r.createdBy === undefined ? '' : ` created by ${r.createdBy}`;
      const from = producers.length > 0 ? `, from ${producers.join(' or ')}` : ' (no listed tool produces it)';
      lines.push(`'${a.qualifiedName}' needs resource \`${r.resource}\`${by} first${from}`);
    }
  }
  return lines;
}
