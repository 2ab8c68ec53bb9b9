/**
 * The live tool set and its router, swapped together whenever the registry
 * reloads. A call takes one snapshot at its start and finishes on it, so a
 * hot reload never changes the tools under a call in flight.
 *
 * A participant's action whose definition changed upstream is `quarantined`
 * (API.md, Participants, Pinning): it is in `set` (the registry's), but not in
 * `callable`, which is what callers are offered (definitions, prompt, MCP
 * tools/list, GET /tools for non-admins) and what the router routes to. A
 * call naming it explicitly is answered from `quarantined` (409
 * tool_definition_changed). Both are computed once per tool set: a set
 * without quarantined actions (every bundled one) pays nothing per call.
 */
import { IntentRouter } from './intent-router';
import type { LoadedAction, LoadedTool, ToolRegistry, ToolSet } from './tool-registry';
import { contractsToJson } from './tool-dependencies';
import type { Alignment } from './tool-interface';

export interface RoutedAction {
  tool: string;
  action: string;
  loaded: LoadedAction;
}

export interface CatalogSnapshot {
  /** Every tool and action the registry holds, quarantined ones included. */
  set: ToolSet;
  /** What callers are offered and the router routes to: `set` without quarantined actions (the same object when none is). */
  callable: ToolSet;
  router: IntentRouter<RoutedAction>;
  /**
   * A call that names a quarantined action explicitly (`tool/action`,
   * `tool_action`, or `tool` with the action): that action; undefined
   * otherwise (and always for a bare action). Asked only after the router
   * found nothing to run.
   */
  quarantined(action: string, tool?: string): LoadedAction | undefined;
}

export function baseAlignment(level: number): Alignment {
  return level === 1 ? 'aligned' : 'agnostic';
}

export interface ActionView {
  name: string;
  qualifiedName: string;
  providerName: string;
  description: string;
  level: number;
  alignment: Alignment;
  inputSchema: Record<string, unknown>;
  /** JSON Schema of the output, for actions that declare one. */
  outputSchema?: Record<string, unknown>;
  /** A participant's action whose definition changed upstream, awaiting an admin's approval (shown to admins only). */
  status?: 'quarantined';
  /** Its coordination contracts (API.md, "Tool dependencies"), schemas as JSON Schema. */
  requires?: { resource: string; createdBy?: string; schema?: Record<string, unknown> }[];
  produces?: { resource: string; schema?: Record<string, unknown> }[];
}

export interface ToolView {
  name: string;
  version: string;
  description: string;
  capabilities: string[];
  actions: ActionView[];
}

export function actionView(a: LoadedAction): ActionView {
  return {
    name: a.name,
    qualifiedName: a.qualifiedName,
    providerName: a.providerName,
    description: a.description,
    level: a.level,
    alignment: baseAlignment(a.level),
    inputSchema: a.inputSchema,
    ...(a.outputSchema ? { outputSchema: a.outputSchema } : {}),
    ...(isQuarantined(a) ? { status: 'quarantined' as const } : {}),
    ...contractsToJson(a),
  };
}

export function isQuarantined(a: LoadedAction): boolean {
  return a.remote?.status === 'quarantined';
}

/** The set without its quarantined actions (a tool left with none is left out): `set` itself when it has none. */
function callableSet(set: ToolSet): ToolSet {
  if (!set.actions.some(isQuarantined)) return set;
  const tools = set.tools
    .map((t) => (t.actions.some(isQuarantined) ? { ...t, actions: t.actions.filter((a) => !isQuarantined(a)) } : t))
    .filter((t) => t.actions.length > 0);
  return Object.freeze({
    generation: set.generation,
    tools: Object.freeze(tools),
    byName: new Map(tools.map((t) => [t.name, t] as const)),
    actions: Object.freeze(tools.flatMap((t) => t.actions)),
    // Quarantined actions are a participant's, which declare no contracts: no edge is lost.
    edges: set.edges,
  });
}

function routerOf(set: ToolSet, minConfidence: number): IntentRouter<RoutedAction> {
  const entries = set.actions.map((loaded) => ({ tool: loaded.tool, action: loaded.name, loaded }));
  return IntentRouter.build(entries, { minConfidence });
}

/**
 * Finds the quarantined action a call names explicitly: the full set's router
 * (built only for a set that has quarantined actions), whose explicit hit is
 * taken only when it is a quarantined action.
 */
function quarantineLookup(set: ToolSet, callable: ToolSet, minConfidence: number): CatalogSnapshot['quarantined'] {
  if (set === callable) return () => undefined;
  const full = routerOf(set, minConfidence);
  return (action, tool) => {
    const route = full.route(action, tool);
    return route.kind === 'ok' && route.explicit && isQuarantined(route.entry.loaded) ? route.entry.loaded : undefined;
  };
}

export function toolView(t: LoadedTool): ToolView {
  return {
    name: t.name,
    version: t.version,
    description: t.description,
    capabilities: t.actions.map((a) => a.name),
    actions: t.actions.map(actionView),
  };
}

export class ToolCatalog {
  private snap: CatalogSnapshot | undefined;
  private views: ToolView[] | undefined;
  private adminViews: ToolView[] | undefined;

  constructor(
    readonly registry: ToolRegistry,
    private readonly minConfidence: number,
  ) {
    registry.on('change', (set: ToolSet) => this.install(set));
    if (registry.ready) this.install(registry.current());
  }

  /** True once the registry's first load finished (the router is then built on first use). */
  get ready(): boolean {
    return this.snap !== undefined || this.registry.ready;
  }

  snapshot(): CatalogSnapshot {
    if (!this.snap) this.install(this.registry.current());
    return this.snap!;
  }

  /**
   * GET /tools, built once per tool set: the callable tools, or for an admin
   * every tool, quarantined actions marked `status: "quarantined"`.
   */
  toolViews(admin = false): ToolView[] {
    const snap = this.snapshot();
    if (admin) {
      this.adminViews ??= snap.set === snap.callable ? this.toolViews() : snap.set.tools.map(toolView);
      return this.adminViews;
    }
    this.views ??= snap.callable.tools.map(toolView);
    return this.views;
  }

  private install(set: ToolSet): void {
    const callable = callableSet(set);
    const router = routerOf(callable, this.minConfidence);
    const quarantined = quarantineLookup(set, callable, this.minConfidence);
    // One assignment: readers see the old snapshot or the new one, never a mix.
    this.snap = { set, callable, router, quarantined };
    this.views = undefined;
    this.adminViews = undefined;
  }
}
