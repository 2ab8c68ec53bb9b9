/**
 * Tool and action names, and the two qualified forms an action is known by
 * (API.md "Conventions", seed 000):
 * - canonical `tool/action`, what an LLM is shown in prompts;
 * - provider-safe `tool_action`, because OpenAI, Anthropic, Bedrock and MCP
 *   clients reject `/` in function names.
 * Names are kebab-case, so `_` never occurs inside one and both forms map back
 * to exactly one (tool, action) pair.
 */

/** Kebab-case: lowercase words of letters and digits, the first starting with a letter. */
export const TOOL_NAME_RE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** 31 + `_` + 31 = 63, so every provider name fits the providers' 64-character limit. */
export const MAX_NAME_LENGTH = 31;

/** What function-calling providers accept as a function name. */
export const PROVIDER_NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

export const CANONICAL_SEPARATOR = '/';
export const PROVIDER_SEPARATOR = '_';

export type QualifiedForm = 'canonical' | 'provider';

export interface ParsedQualifiedName {
  tool: string;
  action: string;
  form: QualifiedForm;
}

export function isValidToolName(name: string): boolean {
  return typeof name === 'string' && name.length <= MAX_NAME_LENGTH && TOOL_NAME_RE.test(name);
}

/** Same rule as tool names: both halves of a qualified name must survive the round trip. */
export function isValidActionName(name: string): boolean {
  return isValidToolName(name);
}

/** `tool/action`. Throws on invalid names: a caller that passes them has a bug. */
export function qualifiedName(tool: string, action: string): string {
  assertValidPair(tool, action);
  return `${tool}${CANONICAL_SEPARATOR}${action}`;
}

/** `tool_action`. Throws on invalid names: only valid ones map back unambiguously. */
export function providerName(tool: string, action: string): string {
  assertValidPair(tool, action);
  return `${tool}${PROVIDER_SEPARATOR}${action}`;
}

/**
 * The (tool, action) pair behind either qualified form, or undefined when `s`
 * is not exactly a valid tool name, one separator and a valid action name.
 * No trimming or case folding: this is the strict inverse of the two
 * functions above (the intent router does the lenient matching).
 */
export function parseQualified(s: string): ParsedQualifiedName | undefined {
  if (typeof s !== 'string') return undefined;
  return splitAt(s, CANONICAL_SEPARATOR, 'canonical') ?? splitAt(s, PROVIDER_SEPARATOR, 'provider');
}

/**
 * Lenient kebab-case form of user or LLM input: `createResource`,
 * `create_resource`, `Create Resource` and `CREATE-RESOURCE` all become
 * `create-resource`. Anything that is not a letter or digit separates words.
 * The result is not necessarily a valid name (it may be empty or start with
 * a digit); a valid name maps to itself.
 */
export function toKebabCase(input: string): string {
  return (
    input
      // camelCase and PascalCase word boundaries: `readResource`, `v2Export`.
      .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
      // An acronym followed by a word: `HTTPRequest` -> `HTTP-Request`. One
      // capital on the left (not `[A-Z]+`) keeps the regex linear on long input.
      .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
  );
}

/**
 * Code-unit order of names, not localeCompare: an order that is part of a
 * response (sorted candidates, ties) must not depend on the host's locale.
 */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function splitAt(s: string, separator: string, form: QualifiedForm): ParsedQualifiedName | undefined {
  const at = s.indexOf(separator);
  if (at < 0) return undefined;
  const tool = s.slice(0, at);
  const action = s.slice(at + 1);
  // A second separator lands in `action`, which the name rule then rejects.
  if (!isValidToolName(tool) || !isValidActionName(action)) return undefined;
  return { tool, action, form };
}

function assertValidPair(tool: string, action: string): void {
  if (!isValidToolName(tool)) throw new TypeError(`Invalid tool name: ${JSON.stringify(tool)}`);
  if (!isValidActionName(action)) throw new TypeError(`Invalid action name: ${JSON.stringify(action)}`);
}
