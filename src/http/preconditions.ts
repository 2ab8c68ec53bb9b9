/**
 * If-Match / If-None-Match: `*` or a list of entity tags (RFC 9110 §8.8.3).
 * This API's tags are versions (`"3"`); a well-formed tag that is no version
 * (`"abc"`, `W/"x"`) simply matches nothing, which is a 412, not a 400.
 * If-Match compares strongly (RFC 9110 §13.1.1: a weak tag `W/"3"` matches
 * nothing), If-None-Match weakly (§13.1.2: `W/"3"` names version 3).
 * The spec's EntityTags pattern (src/controllers/types.ts) is this grammar.
 */
import type { Precondition } from '../core/resource-service';
import { fieldProblem } from './problem';

/** No client needs more; a longer list is only an attempt to make the server work. */
export const MAX_PRECONDITION_LENGTH = 4096;

// One entity tag, optionally weak, then a comma or the end; sticky, so the whole value must be tags.
const ENTITY_TAG = /[ \t]*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*(?:,|$)/y;
const VERSION = /^\d{1,9}$/;

export function parsePrecondition(
  header: string | undefined,
  name: 'If-Match' | 'If-None-Match',
): Precondition | undefined {
  if (header === undefined) return undefined;
  if (header.length > MAX_PRECONDITION_LENGTH) {
    throw fieldProblem(name, `is longer than ${MAX_PRECONDITION_LENGTH} characters`);
  }
  const value = header.trim();
  if (value === '*') return { any: true };
  const versions = new Set<number>();
  ENTITY_TAG.lastIndex = 0;
  let count = 0;
  while (ENTITY_TAG.lastIndex < value.length) {
    const m = ENTITY_TAG.exec(value);
    if (!m) break;
    count++;
    const weak = m[1] !== undefined;
    if (VERSION.test(m[2]!) && !(weak && name === 'If-Match')) versions.add(Number(m[2]));
  }
  if (count === 0 || ENTITY_TAG.lastIndex !== value.length || value.endsWith(',')) {
    throw fieldProblem(name, 'must be * or entity tags such as "3"');
  }
  return { versions: [...versions] };
}
