/** Conversation ids and resource names: URL-safe, as the seed's best practices ask (one rule for both). */
import { RESOURCE_NAME_PATTERN } from './tool-interface';

export const ID_RE = RESOURCE_NAME_PATTERN;

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_RE.test(value);
}
