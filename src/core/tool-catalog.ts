/**
 * The live tool set and its router, swapped together whenever the registry
 * reloads. A call takes one snapshot at its start and finishes on it, so a
 * hot reload never changes the tools under a call in flight.
 */
import { IntentRouter } from './intent-router';
import type { LoadedAction, LoadedTool, ToolRegistry, ToolSet } from './tool-registry';
import type { Alignment } from './tool-interface';

export interface RoutedAction {
  tool: string;
  action: string;
  loaded: LoadedAction;
}

export interface CatalogSnapshot {
  set: ToolSet;
  router: IntentRouter<RoutedAction>;
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

  /** GET /tools, built once per tool set. */
  toolViews(): ToolView[] {
    const snap = this.snapshot();
    this.views ??= snap.set.tools.map(toolView);
    return this.views;
  }

  private install(set: ToolSet): void {
    const entries = set.actions.map((loaded) => ({ tool: loaded.tool, action: loaded.name, loaded }));
    const router = IntentRouter.build(entries, { minConfidence: this.minConfidence });
    // One assignment: readers see the old pair or the new pair, never a mix.
    this.snap = { set, router };
    this.views = undefined;
  }
}
