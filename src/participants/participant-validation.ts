/**
 * A participant's registration body (API.md, "Participants"), checked with
 * zod: the name is a tool name, each transport has its required fields and
 * no other transport's, and every http(s) address passes the address rules
 * (link-local and cloud metadata refused unless PARTICIPANT_ALLOWED_HOSTS
 * lists them). A bad body is one 400 validation_failed naming every field.
 * PATCH merges its changes onto the stored participant and checks the whole
 * result the same way.
 */
import { z } from 'zod';
import { AppError, type FieldError } from '../core/errors';
import { MAX_NAME_LENGTH, TOOL_NAME_RE } from '../core/naming';

const ZHeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'must be an HTTP header name');
const ZEnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');
// No line breaks or NULs: a header value must not smuggle another header; an env value must reach the child whole.
const ZSecretValue = z
  .string()
  .max(8192)
  .regex(/^[^\r\n\0]*$/, 'must hold no line break or NUL');
const ZLevel = z.literal([1, 2, 3]);
const ZNames = z.array(z.string().min(1).max(256)).max(1000);

export const ZParticipantBody = z.strictObject({
  name: z
    .string()
    .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
    .regex(TOOL_NAME_RE, 'must be kebab-case (a tool name: lowercase letters, digits, single hyphens)'),
  description: z.string().max(2000).optional(),
  transport: z.enum(['mcp-http', 'mcp-stdio', 'openapi']),
  url: z.string().max(2048).optional(),
  command: z.string().min(1).max(4096).optional(),
  args: z.array(z.string().max(4096)).max(256).optional(),
  cwd: z.string().min(1).max(4096).optional(),
  spec: z.record(z.string(), z.unknown()).optional(),
  specUrl: z.string().max(2048).optional(),
  baseUrl: z.string().max(2048).optional(),
  headers: z.record(ZHeaderName, ZSecretValue).optional(),
  env: z.record(ZEnvName, ZSecretValue).optional(),
  levels: z.record(z.string().min(1).max(256), ZLevel).optional(),
  include: ZNames.optional(),
  exclude: ZNames.optional(),
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
  enabled: z.boolean().optional(),
});
export type TParticipantBody = z.infer<typeof ZParticipantBody>;

/** PATCH: any field but the name; a secret map's `null` value removes that key. */
export const ZParticipantPatch = ZParticipantBody.omit({ name: true })
  .extend({
    headers: z.record(ZHeaderName, ZSecretValue.nullable()).optional(),
    env: z.record(ZEnvName, ZSecretValue.nullable()).optional(),
  })
  .partial();
export type TParticipantPatch = z.infer<typeof ZParticipantPatch>;

export const ZCredentialsBody = z.strictObject({ headers: z.record(ZHeaderName, ZSecretValue) });

/** What an address rule says of a URL: undefined when it may be used, else why not. */
export type UrlCheck = (url: string) => string | undefined;

const TRANSPORT_FIELDS: Record<TParticipantBody['transport'], { required: string[][]; allowed: string[] }> = {
  'mcp-http': { required: [['url']], allowed: ['url', 'headers'] },
  'mcp-stdio': { required: [['command']], allowed: ['command', 'args', 'cwd', 'env'] },
  openapi: { required: [['spec', 'specUrl']], allowed: ['spec', 'specUrl', 'baseUrl', 'headers'] },
};
const TRANSPORT_ONLY = ['url', 'command', 'args', 'cwd', 'env', 'spec', 'specUrl', 'baseUrl', 'headers'];

function zodErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => {
    const path = i.path.map(String);
    if (i.code === 'unrecognized_keys' && i.keys[0] !== undefined) path.push(i.keys[0]);
    return { path: path.join('.') || 'body', message: i.message };
  });
}

function transportErrors(body: TParticipantBody, checkUrl: UrlCheck): FieldError[] {
  const errors: FieldError[] = [];
  const rules = TRANSPORT_FIELDS[body.transport];
  const has = (f: string): boolean => (body as Record<string, unknown>)[f] !== undefined;
  for (const oneOf of rules.required) {
    if (!oneOf.some(has)) errors.push({ path: oneOf[0]!, message: `is required for transport ${body.transport}` });
  }
  if (body.transport === 'openapi' && has('spec') && has('specUrl')) {
    errors.push({ path: 'specUrl', message: 'give the document inline (spec) or by URL (specUrl), not both' });
  }
  for (const f of TRANSPORT_ONLY) {
    if (has(f) && !rules.allowed.includes(f)) {
      errors.push({ path: f, message: `is not used by transport ${body.transport}` });
    }
  }
  for (const f of ['url', 'specUrl', 'baseUrl'] as const) {
    const url = body[f];
    if (url === undefined) continue;
    const why = checkUrl(url);
    if (why !== undefined) errors.push({ path: f, message: why });
  }
  return errors;
}

function refuse(errors: FieldError[]): AppError {
  const first = errors[0]!;
  return new AppError('validation_failed', `${first.path}: ${first.message}`, errors);
}

/** The body, checked: AppError validation_failed with every problem in `errors`. */
export function validateParticipant(body: unknown, checkUrl: UrlCheck): TParticipantBody {
  const parsed = ZParticipantBody.safeParse(body);
  if (!parsed.success) throw refuse(zodErrors(parsed.error));
  const errors = transportErrors(parsed.data, checkUrl);
  if (errors.length > 0) throw refuse(errors);
  return parsed.data;
}

export function validatePatch(body: unknown): TParticipantPatch {
  const parsed = ZParticipantPatch.safeParse(body);
  if (!parsed.success) throw refuse(zodErrors(parsed.error));
  return parsed.data;
}

export function validateCredentials(body: unknown): Record<string, string> {
  const parsed = ZCredentialsBody.safeParse(body);
  if (!parsed.success) throw refuse(zodErrors(parsed.error));
  return parsed.data.headers;
}

/** A secret map with a patch applied key by key (null removes a key); undefined: unchanged. */
export function mergeSecrets(
  current: Record<string, string>,
  patch: Record<string, string | null> | undefined,
): Record<string, string> {
  if (patch === undefined) return current;
  const next = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  return next;
}

/** The stored participant with a PATCH applied, as a full body to validate again. */
export function applyPatch(current: TParticipantBody, patch: TParticipantPatch): TParticipantBody {
  const { headers, env, ...rest } = patch;
  const merged: Record<string, unknown> = { ...current, ...rest };
  const h = mergeSecrets(current.headers ?? {}, headers);
  const e = mergeSecrets(current.env ?? {}, env);
  merged.headers = Object.keys(h).length > 0 ? h : undefined;
  merged.env = Object.keys(e).length > 0 ? e : undefined;
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return merged as TParticipantBody;
}
