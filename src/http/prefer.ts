/**
 * `Prefer: wait=N` (RFC 7240): how long a call needing approval may be held
 * (API.md, "Held calls"). A preference the server does not understand, or
 * one malformed, is ignored (RFC 7240 §2); only the first `wait` counts.
 */

/** RFC 7240's `wait` value: delta-seconds (RFC 7234 §1.2.1). */
const DELTA_SECONDS = /^\d+$/;

/**
 * The `wait` preference of a Prefer header (several headers arrive joined
 * with commas), in seconds; undefined when absent or malformed.
 */
export function preferredWait(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  for (const preference of text.split(',')) {
    // token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] ): the parameters say nothing of wait.
    const head = preference.split(';', 1)[0] ?? '';
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (name !== 'wait') continue;
    if (eq < 0) return undefined;
    let value = head.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!DELTA_SECONDS.test(value)) return undefined;
    // A number too large to hold is taken as the greatest (RFC 7234 §1.2.1); the caller clamps it anyway.
    return value.length > 9 ? 999_999_999 : Number(value);
  }
  return undefined;
}

/** The wait granted: the preference clamped to the server's maximum (APPROVAL_MAX_WAIT_SECONDS). */
export function grantedWait(header: string | string[] | undefined, maxSeconds: number): number | undefined {
  const wanted = preferredWait(header);
  return wanted === undefined ? undefined : Math.min(wanted, maxSeconds);
}
