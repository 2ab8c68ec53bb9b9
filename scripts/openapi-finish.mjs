/**
 * The one step after `tsoa spec`, for what tsoa cannot say. Run as
 * `node scripts/openapi-finish.mjs openapi/openapi.json` (npm run generate
 * does); test/openapi-spec.test.ts applies the same function to a fresh
 * `tsoa spec`, so the committed spec stays exactly what this produces.
 *
 * 1. A status answered in two media types with different schemas: tsoa gives
 *    one schema to all the media types of a status, so negotiate declares
 *    `NegotiationResult | Problem` as both application/json and
 *    application/problem+json. Here each media type keeps its own schema
 *    (Problem for problem+json, the rest for json) and the examples whose
 *    shape is its own (a problem has `type` and `status`).
 * 2. Response examples from @Response are labelled "Example 1", "Example 2"
 *    by tsoa (it has no label argument there): they are named by their
 *    `code` instead, which is what a reader picks from Swagger UI's list.
 * 3. The statuses the middleware in front of every route answers
 *    (src/app.ts, src/http): tsoa knows only each controller's own
 *    @Response list, so an operation that does not repeat them would not
 *    declare them. Each is added where the operation lacks it, as a
 *    reference to one response in components.responses; where it has its
 *    own, the middleware's problem+json is added to its media types if
 *    missing (negotiate's 403 and 500 are NegotiationResults of their own),
 *    and a 403 names the Host/Origin refusal too: 400 for a URL that does not decode or
 *    holds a NUL or lone surrogate (checkUrl), 403 for a Host or Origin that
 *    is not the service's (hostOriginGuard), 500 (errorHandler); on every
 *    operation with security 401 (authenticate), 429 (the per-principal and
 *    failed-authentication limits) and 503 (authentication reads the key
 *    store, or a JWT issuer's keys); on every operation with a body 413
 *    (BODY_LIMIT) and 415 (the body parser).
 * 4. What the input checks refuse in any string (src/http/input-checks.ts:
 *    NUL characters, lone UTF-16 surrogates): every string schema of a
 *    request (parameters and the components they and the bodies use) that
 *    has no pattern, enum or format of its own gets STORABLE_TEXT as its
 *    pattern, so a generated client or test sends only what can be stored.
 *    A value of any JSON type (`unknown`: metadata values, resource data,
 *    args) cannot say it in OpenAPI 3.0: its description does.
 * 5. Rules tsoa's JSDoc cannot attach to one field (SCHEMA_RULES): a rule
 *    between two fields; a nullable reference (tsoa writes it without the
 *    `type` OpenAPI 3.0 needs beside `nullable`).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const PROBLEM_JSON = 'application/problem+json';
const JSON_TYPE = 'application/json';
const PROBLEM_REF = '#/components/schemas/Problem';

const isProblem = (value) =>
  typeof value === 'object' && value !== null && typeof value.type === 'string' && typeof value.status === 'number';

function relabel(examples) {
  const entries = Object.entries(examples);
  const codes = entries.map(([label, ex]) => (/^Example \d+$/.test(label) ? ex?.value?.code : undefined));
  const unique = codes.every((c) => typeof c === 'string') && new Set(codes).size === codes.length;
  if (!unique) return examples;
  return Object.fromEntries(entries.map(([, ex], i) => [codes[i], ex]));
}

function splitMediaTypes(content) {
  const json = content[JSON_TYPE];
  const problem = content[PROBLEM_JSON];
  const anyOf = json?.schema?.anyOf;
  if (!problem || !Array.isArray(anyOf) || !anyOf.some((s) => s.$ref === PROBLEM_REF)) return content;
  const others = anyOf.filter((s) => s.$ref !== PROBLEM_REF);
  const pick = (keep) =>
    json.examples
      ? { examples: Object.fromEntries(Object.entries(json.examples).filter(([, ex]) => keep(isProblem(ex.value)))) }
      : {};
  return {
    ...content,
    [JSON_TYPE]: { schema: others.length === 1 ? others[0] : { anyOf: others }, ...pick((p) => !p) },
    [PROBLEM_JSON]: { schema: { $ref: PROBLEM_REF }, ...pick((p) => p) },
  };
}

const REQUEST_ID = '3f8e2a5c-9d41-4b7e-8a16-2c5d0e9b7f30';

const TITLES = {
  validation_failed: 'Validation failed',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal: 'Internal server error',
  unavailable: 'Service unavailable',
};

function problemResponse(status, code, description, detail, headers) {
  const value = { type: `urn:problem:${code}`, title: TITLES[code], status, detail, code, requestId: REQUEST_ID };
  if (code === 'validation_failed') value.errors = [{ path: 'path', message: 'has malformed percent-encoding' }];
  return {
    description,
    ...(headers ? { headers } : {}),
    content: { [PROBLEM_JSON]: { schema: { $ref: PROBLEM_REF }, examples: { [code]: { value } } } },
  };
}

const FOREIGN = "A Host or Origin that is not this service's (ALLOWED_HOSTS, ALLOWED_ORIGINS)";

/** Step 3: [status, name in components.responses, applies to (operation, is secured), the response]. */
const MIDDLEWARE_RESPONSES = [
  [
    '400',
    'BadUrl',
    () => true,
    problemResponse(
      400,
      'validation_failed',
      'Malformed URL: bad percent-encoding, or a NUL character or lone surrogate in the path or query',
      'path: has malformed percent-encoding',
    ),
  ],
  [
    '401',
    'Unauthorized',
    (_op, secured) => secured,
    problemResponse(401, 'unauthorized', 'No valid bearer token', 'This endpoint needs Authorization: Bearer TOKEN', {
      'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750).', schema: { type: 'string' } },
    }),
  ],
  [
    '403',
    'ForeignHostOrOrigin',
    () => true,
    problemResponse(
      403,
      'forbidden',
      FOREIGN,
      'Host "attacker.example" is not a name of this service; the names are configured in ALLOWED_HOSTS',
    ),
  ],
  [
    '413',
    'PayloadTooLarge',
    (op) => op.requestBody !== undefined,
    problemResponse(413, 'payload_too_large', 'Body larger than BODY_LIMIT', 'Request body is larger than BODY_LIMIT'),
  ],
  [
    '415',
    'UnsupportedMediaType',
    (op) => op.requestBody !== undefined,
    problemResponse(
      415,
      'unsupported_media_type',
      'Body not JSON, or an unsupported Content-Encoding or charset',
      'Content-Type "text/plain" is not accepted; send the body as application/json',
    ),
  ],
  [
    '429',
    'RateLimited',
    (_op, secured) => secured,
    problemResponse(
      429,
      'rate_limited',
      'Over RATE_LIMIT_PER_MINUTE for this principal, or too many failed authentications from this address',
      'Too many requests for this principal; retry after Retry-After seconds',
      {
        'Retry-After': { description: 'Seconds until the limit resets.', schema: { type: 'integer', minimum: 0 } },
      },
    ),
  ],
  [
    '500',
    'InternalError',
    () => true,
    problemResponse(500, 'internal', 'An unexpected error (details only in the log)', 'Internal server error'),
  ],
  [
    '503',
    'Unavailable',
    (_op, secured) => secured,
    problemResponse(
      503,
      'unavailable',
      'The database (or a JWT issuer) is unavailable; retry later',
      'The database is unavailable; retry later',
    ),
  ],
];

/** Adds the middleware's responses `operation` lacks, as references; returns the names it used. */
function addMiddlewareResponses(operation, rootSecurity, used) {
  const security = operation.security ?? rootSecurity ?? [];
  const secured = security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0);
  let added = false;
  for (const [status, name, applies, response] of MIDDLEWARE_RESPONSES) {
    if (!applies(operation, secured)) continue;
    const own = operation.responses[status];
    if (own) {
      // The middleware answers problem+json, also where the operation's own answer is a NegotiationResult.
      if (own.content && !own.content[PROBLEM_JSON])
        own.content[PROBLEM_JSON] = structuredClone(response.content[PROBLEM_JSON]);
      if (status === '403' && !/Origin/.test(own.description))
        own.description += `; or ${FOREIGN.replace(/^A /, 'a ')}`;
      continue;
    }
    operation.responses[status] = { $ref: `#/components/responses/${name}` };
    used.add(name);
    added = true;
  }
  if (!added) return;
  const sorted = Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b));
  operation.responses = Object.fromEntries(sorted);
}

/**
 * Step 4: a string the database can store, written so that ECMAScript
 * (without the u flag: UTF-16 code units, a surrogate pair is two) and
 * code-point engines (Python's re, where a pair is one code point the first
 * class already takes) read it alike.
 */
export const STORABLE_TEXT = '^(?:[^\\x00\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$';

function refName(ref) {
  return ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : undefined;
}

/** The component schemas `schema` uses, transitively, into `seen`. */
function collectRefs(schema, components, seen) {
  if (!schema || typeof schema !== 'object') return;
  if (typeof schema.$ref === 'string') {
    const name = refName(schema.$ref);
    if (name && !seen.has(name) && components[name]) {
      seen.add(name);
      collectRefs(components[name], components, seen);
    }
    return;
  }
  for (const value of Object.values(schema)) {
    if (Array.isArray(value)) for (const item of value) collectRefs(item, components, seen);
    else if (value && typeof value === 'object') collectRefs(value, components, seen);
  }
}

/** Gives every plain string schema in `schema` (not below a $ref) the storable-text pattern. */
function patternStrings(schema) {
  if (!schema || typeof schema !== 'object' || typeof schema.$ref === 'string') return;
  if (schema.type === 'string' && !schema.pattern && !schema.enum && !schema.format) schema.pattern = STORABLE_TEXT;
  for (const key of ['items', 'additionalProperties', 'not']) {
    if (schema[key] && typeof schema[key] === 'object') patternStrings(schema[key]);
  }
  for (const key of ['properties']) {
    for (const child of Object.values(schema[key] ?? {})) patternStrings(child);
  }
  for (const key of ['anyOf', 'allOf', 'oneOf']) {
    for (const child of schema[key] ?? []) patternStrings(child);
  }
}

function patternRequestStrings(spec) {
  const components = spec.components?.schemas ?? {};
  const used = new Set();
  for (const operations of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        // Header values are bytes the HTTP parser already limits; paths and queries are percent-decoded.
        if (parameter.in === 'header') continue;
        patternStrings(parameter.schema);
        collectRefs(parameter.schema, components, used);
      }
      for (const media of Object.values(operation.requestBody?.content ?? {}))
        collectRefs(media.schema, components, used);
    }
  }
  for (const name of used) patternStrings(components[name]);
}

/**
 * Step 5, by component name. Each entry merges into that schema; the truth
 * test (test/http/openapi-truth.test.ts) checks each against the service.
 */
const SCHEMA_RULES = {
  // src/core/keys.ts: a user may not take the built-in admin's subject (it would own that admin's conversations).
  CreateKeyBody: {
    anyOf: [
      { properties: { role: { type: 'string', enum: ['admin'] } } },
      { properties: { subject: { not: { type: 'string', enum: ['admin'] } } } },
    ],
  },
  // POST …/transactions: one result per operation, null for a delete. tsoa writes `Resource | null`
  // as `{ allOf: [$ref], nullable: true }`, and OpenAPI 3.0 reads `nullable` only beside a `type`.
  TransactionResult: {
    properties: {
      results: {
        items: { type: 'object', allOf: [{ $ref: '#/components/schemas/Resource' }], nullable: true },
        type: 'array',
        description: 'The resource as its operation left it (checked, created, updated); null for a delete.',
      },
    },
  },
  // Not here: JsonObject's `__proto__` rule. As `not: {required: ['__proto__']}` every
  // JavaScript validator (ajv: `data.__proto__ !== undefined`) would refuse every object; its
  // description says it.
};

function applySchemaRules(spec) {
  const components = spec.components?.schemas ?? {};
  for (const [name, rule] of Object.entries(SCHEMA_RULES)) {
    if (!components[name]) throw new Error(`openapi-finish: no schema ${name} for its rule`);
    Object.assign(components[name], structuredClone(rule));
  }
}

/** The finished spec, as text in tsoa's own formatting (tab-indented JSON). */
export function finishSpec(text) {
  const spec = JSON.parse(text);
  const usedResponses = new Set();
  for (const operations of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {})) {
        if (!response.content) continue;
        response.content = splitMediaTypes(response.content);
        for (const media of Object.values(response.content)) {
          if (media.examples) media.examples = relabel(media.examples);
        }
      }
      addMiddlewareResponses(operation, spec.security, usedResponses);
    }
  }
  if (usedResponses.size > 0) {
    spec.components.responses = Object.fromEntries(
      MIDDLEWARE_RESPONSES.filter(([, name]) => usedResponses.has(name)).map(([, name, , response]) => [
        name,
        response,
      ]),
    );
  }
  patternRequestStrings(spec);
  applySchemaRules(spec);
  return JSON.stringify(spec, null, '\t');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node scripts/openapi-finish.mjs openapi/openapi.json');
  const before = readFileSync(file, 'utf8');
  const after = finishSpec(before);
  if (after !== before) writeFileSync(file, after);
}
