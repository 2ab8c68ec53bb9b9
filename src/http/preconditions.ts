/**
 * If-Match / If-None-Match: `*` or a list of entity tags (RFC 9110 §8.8.3).
 * This API's tags are versions (`"3"`); a well-formed tag that is no version
 * (`"abc"`, `W/"x"`) simply matches nothing, which is a 412, not a 400.
 */
import type { Precondition } from '../core/resource-service';
import { fieldProblem } from './problem';

/** No client needs more; a longer list is only an attempt to make the server work. */
export const MAX_PRECONDITION_LENGTH = 4096;

// One entity tag, optionally weak, then a comma or the end; sticky, so the whole value must be tags.
const ENTITY_TAG = /[ \t]*(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*(?:,|$)/y;
const VERSION = /^\d{1,9}$/;

export function parsePrecondition(header: string | undefined, name: string): Precondition | undefined {
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
    if (VERSION.test(m[1]!)) versions.add(Number(m[1]));
  }
  if (count === 0 || ENTITY_TAG.lastIndex !== value.length || value.endsWith(',')) {
    throw fieldProblem(name, 'must be * or entity tags such as "3"');
  }
  return { versions: [...versions] };
}
