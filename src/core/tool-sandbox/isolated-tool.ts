/**
 * A TOOLS_DIR module as the rest of the service sees it: a LoadedTool built
 * from the metadata its sandbox worker reported, whose actions run in that
 * worker. The args are parsed there too, with the tool's own zod schema: here
 * only their shape (an object) is checked, and a schema failure comes back
 * from the worker as the same `invalid_args` the in-process parser gives (a
 * dry run asks the worker for that check alone, through checkArgs). The
 * action's `prefetch` hint stays in the worker: isolated reads are not prefetched.
 * Its requires/produces come as JSON Schema; their checks run here, rebuilt from it.
 * Its subscriptions' handlers run in the worker too, each as a call of action `on:TYPE`.
 */
import { providerName, qualifiedName } from '../naming';
import { contractsFromJson } from '../tool-dependencies';
import type { ToolLogger } from '../tool-interface';
import { type LoadedSubscription, type SubscriptionMeta, handlerAction } from '../tool-subscriptions';
import { byName, checkName, isRecord, type LoadedAction, type LoadedTool, type ParseArgsResult } from '../tool-module';
import { ToolHost } from './host';
import type { ToolMeta } from './protocol';

export interface IsolatedTool {
  tool: LoadedTool;
  host: ToolHost;
}

function parseShape(args: unknown): ParseArgsResult {
  const value = args ?? {};
  return isRecord(value) ? { ok: true, value } : { ok: false, path: 'args', message: 'must be an object' };
}

/** A subscription whose handler runs in the worker, as action `on:TYPE` with the event as args. */
function handlerOf(tool: string, s: SubscriptionMeta, host: ToolHost): LoadedSubscription {
  const action = handlerAction(s.type);
  const sub: LoadedSubscription = {
    ...s,
    handler: (event, ctx, stop) =>
      host.call(`${tool}/${action}`, action, event as unknown as Record<string, unknown>, ctx, stop),
  };
  return Object.freeze(sub);
}

function toLoadedTool(meta: ToolMeta, host: ToolHost): LoadedTool {
  checkName('tool', meta.name);
  const actions = meta.actions.map((a): LoadedAction => {
    checkName('action', a.name);
    const qualified = qualifiedName(meta.name, a.name);
    const action: LoadedAction = {
      tool: meta.name,
      name: a.name,
      qualifiedName: qualified,
      providerName: providerName(meta.name, a.name),
      description: a.description,
      level: a.level,
      inputSchema: a.inputSchema,
      ...(a.outputSchema ? { outputSchema: a.outputSchema } : {}),
      ...contractsFromJson(a),
      parseArgs: parseShape,
      run: (args, ctx, stop) => host.call(qualified, a.name, args, ctx, stop),
      checkArgs: (args, stop) => host.check(qualified, a.name, args, stop),
    };
    return Object.freeze(action);
  });
  const { name, version, description } = meta;
  return Object.freeze({
    name,
    version,
    description,
    source: host.file,
    actions: Object.freeze(actions.sort(byName)),
    ...(meta.subscriptions?.length
      ? { subscriptions: Object.freeze(meta.subscriptions.map((s) => handlerOf(meta.name, s, host))) }
      : {}),
  });
}

/** Loads the module in a new worker; throws SkipModule (with the worker stopped) when it cannot be used. */
export async function loadIsolatedTool(file: string, loadTimeoutMs: number, logger: ToolLogger): Promise<IsolatedTool> {
  const host = new ToolHost(file, loadTimeoutMs, logger);
  try {
    return { tool: toLoadedTool(await host.load(), host), host };
  } catch (err) {
    host.close();
    throw err;
  }
}
