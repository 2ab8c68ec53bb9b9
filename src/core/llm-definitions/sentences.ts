/**
 * Description text as a model is shown it: whitespace folded onto one line,
 * ending in a full stop, bounded in length. The definitions and the system
 * prompt share these, so an action reads the same in both.
 */

/** Longer first sentences are cut: the prompt lists every action on a line of its own. */
const MAX_ONE_LINE = 200;

export function withFullStop(text: string): string {
  const trimmed = text.trim().replace(/\s+/g, ' ');
  return trimmed === '' || /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

/** The first sentence, on one line: it ends at . ! or ? before a space or the end (not at an ellipsis). */
export function firstSentence(text: string): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  const end = /(?<!\.)[.!?](?= |$)/.exec(flat);
  return truncate(end ? flat.slice(0, end.index + 1) : withFullStop(flat), MAX_ONE_LINE);
}
