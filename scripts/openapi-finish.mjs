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

/** The finished spec, as text in tsoa's own formatting (tab-indented JSON). */
export function finishSpec(text) {
  const spec = JSON.parse(text);
  for (const operations of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {})) {
        if (!response.content) continue;
        response.content = splitMediaTypes(response.content);
        for (const media of Object.values(response.content)) {
          if (media.examples) media.examples = relabel(media.examples);
        }
      }
    }
  }
  return JSON.stringify(spec, null, '\t');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node scripts/openapi-finish.mjs openapi/openapi.json');
  const before = readFileSync(file, 'utf8');
  const after = finishSpec(before);
  if (after !== before) writeFileSync(file, after);
}
