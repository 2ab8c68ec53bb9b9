/**
 * negotiate's `saveAs` (API.md, Participants): the call's result written into
 * the conversation's shared context under a name, created or updated by the
 * tool (a participant is its tool), in the call's own unit of work. Any
 * action may save its result: a participant's (the seed's producer/consumer
 * pattern across a remote and a bundled tool) or a bundled one's.
 *
 * Saving is a write: the call needs the tool's level in the conversation at
 * 2 or above (its action's own level if higher), and an approval for it
 * covers the call with that very name (the approval's action reads
 * `ACTION saveAs:NAME`; no action name holds a space, so it is never another
 * call's).
 */
import { fail, type NegotiateRequest, type NegotiationResult } from './negotiation';
import type { UnitOfWork } from './ports';
import type { ResourceService } from './resource-service';
import { ID_RULE, isValidId } from './resource-names';
import type { Level } from './tool-interface';
import { isRecord, type LoadedAction } from './tool-module';

/** The level a call needs: the action's, at least 2 (write) when it saves its result. */
export function requiredLevel(action: LoadedAction, req: NegotiateRequest): Level {
  return req.saveAs !== undefined && action.level < 2 ? 2 : action.level;
}

/** What an approval records as the call's action: the action, and the name its result is saved under. */
export function approvalAction(action: LoadedAction, req: NegotiateRequest): string {
  return req.saveAs === undefined ? action.name : `${action.name} saveAs:${req.saveAs}`;
}

/** invalid_args for a saveAs that is no resource name; undefined when absent or valid. */
export function saveAsProblem(req: NegotiateRequest, extra: Partial<NegotiationResult>): NegotiationResult | undefined {
  if (req.saveAs === undefined || isValidId(req.saveAs)) return undefined;
  return fail('invalid_args', `Invalid saveAs: ${ID_RULE}`, extra);
}

/**
 * What is saved of an output: a participant's MCP result gives its
 * `structuredContent`, else the text of its content (text parts joined by
 * newlines), an OpenAPI one its `body`; a bundled action's output as it is.
 */
export function savedData(action: LoadedAction, output: unknown): unknown {
  if (!action.remote || !isRecord(output)) return output;
  if (output.structuredContent !== undefined) return output.structuredContent;
  if (Array.isArray(output.content)) {
    const texts = output.content.flatMap((part: unknown) =>
      isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? [part.text] : [],
    );
    if (texts.length > 0) return texts.join('\n');
  }
  if ('body' in output) return output.body ?? null;
  return output;
}

/** Writes `json` (ResourceService.encode) as `name` in `unit` (created or replaced, by `by`): one statement. */
export async function saveIn(
  resources: ResourceService,
  unit: UnitOfWork,
  target: { conversationId: string; name: string; by: string },
  json: string,
): Promise<void> {
  await resources.store.upsert(target.conversationId, target.name, json, target.by, { tx: await unit.transaction() });
}
