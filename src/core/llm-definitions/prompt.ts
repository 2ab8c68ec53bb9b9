/**
 * The system prompt of seed 000 ("System Prompt Enhancement") for the live
 * tool set (GET /tools/prompt): the participants and their tools, how to
 * choose between tools that several participants offer, the provider-safe
 * names, and what a permission upgrade means. Pure: no I/O; callers pass the
 * policy and the conversation's levels they read.
 */
import { LEVEL_NAMES } from '../permissions';
import type { TPolicy } from '../policy';
import type { LoadedAction, ToolSet } from '../tool-registry';
import type { Level } from '../tool-interface';
import { dependencyOrder } from './order';
import { allowedActions, offeredBy } from './selection';
import { firstSentence } from './sentences';

export interface PromptOptions {
  /** Actions this policy denies are left out. */
  policy?: TPolicy;
  /** The conversation's current level per tool, when the prompt is for one conversation. */
  levels?: Readonly<Record<string, Level>>;
}

function levelLabel(level: Level): string {
  return `${LEVEL_NAMES[level]}, level ${level}`;
}

function participantLines(set: ToolSet, allowed: readonly LoadedAction[], options: PromptOptions): string[] {
  const lines: string[] = [];
  for (const tool of set.tools) {
    const actions = allowed.filter((a) => a.tool === tool.name);
    if (actions.length === 0) continue;
    const current = options.levels?.[tool.name];
    const levelNote = current === undefined ? '' : ` (current level in this conversation: ${levelLabel(current)})`;
    lines.push(`- ${tool.name}${levelNote}: ${firstSentence(tool.description)}`);
    for (const a of actions) {
      const upgrade = current !== undefined && current < a.level ? '; needs an upgrade first' : '';
      lines.push(`  - '${a.qualifiedName}' - ${firstSentence(a.description)} (${levelLabel(a.level)}${upgrade})`);
    }
  }
  return lines;
}

function duplicateLines(allowed: readonly LoadedAction[]): string[] {
  return [...offeredBy(allowed)]
    .filter(([, offering]) => offering.length > 1)
    .map(([name, offering]) => `- ${name}: ${offering.map((a) => `'${a.qualifiedName}'`).join(', ')}`);
}

/**
 * The system-prompt text of seed 000 ("System Prompt Enhancement") for the
 * live tool set: the participants (tools) and their tools (actions) in
 * `participant/tool` form, how to choose when several offer the same one, the
 * provider-safe names, and what a permission upgrade means.
 */
export function systemPrompt(set: ToolSet, options: PromptOptions = {}): string {
  const allowed = allowedActions(set, options.policy);
  const example = allowed[0]?.qualifiedName ?? 'calculator/add';
  const [exampleTool = 'calculator', exampleAction = 'add'] = example.split('/');
  const upgradeExample = allowed.find((a) => a.level > 1) ?? { tool: 'PARTICIPANT', level: 2 };
  const duplicates = duplicateLines(allowed);
  const withheld = set.actions.length - allowed.length;

  const sections: string[][] = [
    [
      'You have access to tools from multiple participants in this workspace. ' +
        "Tools are namespaced as 'participant/tool': the participant is the tool provider that owns the tool " +
        `and runs it, so '${example}' is the ${exampleAction} tool of the ${exampleTool} participant. ` +
        'Each tool needs a permission level: read (1), write (2) or execute (3).',
    ],
    ['Participants and their tools:', ...participantLines(set, allowed, options)],
  ];
  if (withheld > 0) {
    sections.push([
      `This conversation's policy withholds ${withheld} more tool(s); they are not listed and cannot be called.`,
    ]);
  }
  sections.push([
    'When multiple participants offer similar tools, consider:',
    "1. The participant's description and capabilities",
    "2. The specific tool's description",
    "3. The context of the user's request",
    ...(duplicates.length > 0
      ? [
          'These tools are offered by more than one participant; a call that names only the tool is refused as ambiguous, so name the participant:',
          ...duplicates,
        ]
      : ['No tool is currently offered by more than one participant.']),
  ]);
  const order = dependencyOrder(set, allowed);
  if (order.length > 0) {
    sections.push([
      'Order: some tools need a resource of the shared context that another tool produces; call the producer first. ' +
        "`{arg}` is the value of that argument of the call. A call whose resources are missing is not run and returns the error code 'dependency_unmet', " +
        'its output.missing naming each resource and the tools that produce it.',
      ...order.map((line) => `- ${line}`),
    ]);
  }
  sections.push([
    "Function-calling APIs that do not allow '/' in function names show the same tools as 'participant_tool' " +
      `(for example '${exampleTool}_${exampleAction}' for '${example}'). Both forms name the same tool and mean the same thing.`,
    "Always use the full 'participant/tool' name when calling tools.",
  ]);
  sections.push([
    'Permissions: each participant has its own permission level in this conversation, 1 (read), 2 (write) or 3 (execute); it starts at 1. ' +
      "A tool runs only when its participant's level is at least the tool's required level. Otherwise the call is not run " +
      'and returns the error code \'permission_required\' with an approval reason ("Permission upgrade required: ...") ' +
      "naming the participant, the tool, the required and the current level. Only the conversation's owner can approve, " +
      `by sending upgrade:PARTICIPANT:level-N (for example upgrade:${upgradeExample.tool}:level-${upgradeExample.level}); ` +
      'you cannot do it yourself. ' +
      'Tell the user which upgrade you need and why, and do not retry the call until they have approved it.',
  ]);
  return `${sections.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}
