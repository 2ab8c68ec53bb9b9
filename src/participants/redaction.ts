/**
 * Keeping secrets out of what an upstream gives back: an upstream may echo
 * the headers it received (or a stdio child its environment) in any text it
 * sends, so every message, log line and result that carries upstream text
 * goes through a Redactor made of the participant's secret values first.
 * Also the one bounded-text helper the participant files share.
 */

export type Redactor = (text: string) => string;

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

// Parts of a header value shorter than this (a scheme like "Bearer") are not secrets on their own.
const MIN_SECRET_PART = 8;
// A value shorter than this (an env flag like "1" or "on") cannot be told from ordinary text; redacting it would mangle every output.
const MIN_SECRET_VALUE = 4;
const REDACTED = '[redacted]';

/** The forms of a secret value an echo may take: as is, URL-encoded, JSON-escaped, and its long parts ("Bearer TOKEN" → TOKEN). */
function secretForms(value: string): string[] {
  const forms = new Set<string>();
  const add = (v: string): void => {
    if (v.length < MIN_SECRET_VALUE) return;
    forms.add(v);
    forms.add(encodeURIComponent(v));
    forms.add(JSON.stringify(v).slice(1, -1));
  };
  add(value);
  for (const part of value.split(/\s+/)) if (part.length >= MIN_SECRET_PART) add(part);
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Replaces every secret value (longest first) in a text with a placeholder. */
export function redactorOf(secretValues: Iterable<string>): Redactor {
  const forms = [...new Set([...secretValues].flatMap(secretForms))].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return keepAsIs;
  return (text) => forms.reduce((t, f) => t.split(f).join(REDACTED), text);
}

/** The redactor of a participant that sends no secret: changes nothing, so redactDeep need not copy. */
const keepAsIs: Redactor = (text) => text;

/**
 * A JSON value with the redactor applied to every string in it (keys too):
 * what an upstream gives back may echo the headers or environment it got,
 * and no response, log or audit entry may carry them.
 */
export function redactDeep(value: unknown, redact: Redactor): unknown {
  if (redact === keepAsIs) return value;
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[redact(k)] = redactDeep(v, redact);
    return out;
  }
  return value;
}
