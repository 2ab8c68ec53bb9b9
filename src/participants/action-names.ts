/**
 * A participant's upstream names as action names (API.md "Participants",
 * Actions), the digest its definitions are pinned by, and the default levels.
 *
 * Names: kebab-case (`read_file` → `read-file`, `createEntities` →
 * `create-entities`, `getUserByID` → `get-user-by-id`, OpenAPI's
 * `GET /pets/{petId}` → `get-pets-pet-id`), valid by the tool-name rule of
 * src/core/naming.ts. An upstream name whose kebab form is empty, longer than
 * MAX_NAME_LENGTH, reserved, or shared with another upstream name gets a
 * digest suffix (`-` and the first hex digits of the SHA-256 of the upstream
 * name) after truncation. The mapping depends only on the set of names, never
 * on their order, so every replica computes the same one.
 */
import { canonicalJson, sha256Hex } from '../core/canonical-json';
import { MAX_NAME_LENGTH, compareNames, isValidActionName, toKebabCase } from '../core/naming';
import { isSpecialAction } from '../core/special-actions';

/** Six hex digits: 16.7 million values, so two names of one participant practically never need more. */
const DIGEST_DIGITS = 6;

/** The base, always suffixed, of an upstream name with no ASCII letter or digit at all (`日本語`, `!!`). */
const EMPTY_BASE = 'action';

/**
 * Upstream name → action name, for every distinct name given (duplicates in
 * the input are one entry). Rules, in order:
 * 1. base = kebab-case of the name; a base that does not start with a letter
 *    gets `x-` in front (`2fa_check` → `x-2fa-check`).
 * 2. A base that is valid, not a special action (`list-tools`), and not
 *    shared with another upstream name is the action name.
 * 3. When several names share a base, a name that is its own base
 *    (`read-file` beside `read_file`) keeps it; the others get suffixes. The
 *    plain name therefore never moves from one upstream tool to another.
 * 4. Everything else: the base cut to leave room for the suffix, then
 *    `-` + digest; more digits if that is still taken.
 */
export function actionNamesFor(upstreamNames: readonly string[]): Map<string, string> {
  const names = [...new Set(upstreamNames)].sort(compareNames);
  const bases = new Map(names.map((n) => [n, baseOf(n)]));
  const byBase = new Map<string | undefined, string[]>();
  for (const [name, base] of bases) byBase.set(base, [...(byBase.get(base) ?? []), name]);

  const result = new Map<string, string>();
  const taken = new Set<string>();
  const needSuffix: string[] = [];
  for (const name of names) {
    const base = bases.get(name);
    if (keepsPlain(name, base, byBase.get(base)!)) {
      result.set(name, base!);
      taken.add(base!);
    } else {
      needSuffix.push(name);
    }
  }
  for (const name of needSuffix) {
    const action = suffixed(name, bases.get(name) ?? EMPTY_BASE, taken);
    result.set(name, action);
    taken.add(action);
  }
  return result;
}

/** SHA-256 hex of the canonical JSON (src/core/canonical-json.ts) of a definition: what an action is pinned by. */
export function definitionDigest(definition: unknown): string {
  return sha256Hex(canonicalJson(definition));
}

/**
 * MCP annotations → the default level: `readOnlyHint: true` → 1;
 * `destructiveHint: false` → 2; else 3 (MCP's defaults assume a tool may
 * destroy). Anything that is not an object with those booleans counts as absent.
 */
export function defaultMcpLevel(annotations: unknown): 1 | 2 | 3 {
  if (annotations === null || typeof annotations !== 'object') return 3;
  const a = annotations as Record<string, unknown>;
  if (a.readOnlyHint === true) return 1;
  if (a.destructiveHint === false) return 2;
  return 3;
}

/** An HTTP method → the default level: GET/HEAD → 1, DELETE → 3, any other → 2. */
export function defaultHttpLevel(method: string): 1 | 2 | 3 {
  const m = method.toUpperCase();
  if (m === 'GET' || m === 'HEAD') return 1;
  if (m === 'DELETE') return 3;
  return 2;
}

/** The kebab form, `x-` in front when it does not start with a letter; undefined when nothing is left. */
function baseOf(upstreamName: string): string | undefined {
  const kebab = toKebabCase(upstreamName);
  if (kebab === '') return undefined;
  return /^[a-z]/.test(kebab) ? kebab : `x-${kebab}`;
}

function keepsPlain(name: string, base: string | undefined, sharing: readonly string[]): boolean {
  if (base === undefined || !isValidActionName(base) || isSpecialAction(base)) return false;
  if (sharing.length === 1) return true;
  return name === base;
}

function suffixed(name: string, base: string, taken: ReadonlySet<string>): string {
  const digest = sha256Hex(name);
  // At most 20 digits, so at least 10 characters of the base stay in front.
  for (let digits = DIGEST_DIGITS; digits <= 20; digits += 2) {
    const head = base.slice(0, MAX_NAME_LENGTH - digits - 1).replace(/-+$/, '');
    const candidate = `${head}-${digest.slice(0, digits)}`;
    if (!taken.has(candidate)) return candidate;
  }
  // Unreachable in practice: seven names whose digests share their first 20 digits.
  throw new Error(`No free action name for upstream name ${JSON.stringify(name)}`);
}
