/**
 * OpenAPI schemas as plain JSON Schema, for an action's input schema (which
 * the service validates with ajv before anything is sent upstream).
 *
 * 3.1 schemas are JSON Schema already; 3.0 schemas are a dialect of their
 * own: `nullable: true` becomes a `"null"` type (or an `anyOf` with one), a
 * boolean `exclusiveMinimum`/`exclusiveMaximum` becomes the number form.
 * Both lose the keywords a validator does not know (`discriminator`, `xml`,
 * `externalDocs`, `x-*`; `example` becomes `examples`) and the identifiers
 * that would clash once a component is copied to several places (`$id`,
 * `$schema`, `$anchor`). In a request, `readOnly` properties are left out:
 * the server sets them, the caller does not send them.
 */
import { isRecord } from '../core/tool-module';

export interface SchemaDialect {
  /** OpenAPI 3.0.x: convert nullable and boolean exclusive bounds. */
  openapi30: boolean;
}

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SCHEMA_ONE = new Set([
  'additionalProperties',
  'items',
  'additionalItems',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
]);
const DROPPED = new Set(['nullable', 'discriminator', 'xml', 'externalDocs', 'example', '$id', '$schema', '$anchor']);

/** The request schema as JSON Schema (a schema may be `true`/`false` in 3.1). */
export function toJsonSchema(schema: unknown, dialect: SchemaDialect): unknown {
  if (typeof schema === 'boolean') return schema;
  if (!isRecord(schema)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key) || key.startsWith('x-')) continue;
    out[key] = convertKeyword(key, value, dialect);
  }
  if (schema.example !== undefined && out.examples === undefined) out.examples = [schema.example];
  leaveOutReadOnly(out);
  if (!dialect.openapi30) return out;
  exclusiveBound(out, 'exclusiveMinimum', 'minimum');
  exclusiveBound(out, 'exclusiveMaximum', 'maximum');
  return schema.nullable === true ? nullable(out) : out;
}

function convertKeyword(key: string, value: unknown, dialect: SchemaDialect): unknown {
  if (SCHEMA_MAPS.has(key) && isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonSchema(v, dialect)]));
  }
  if (SCHEMA_LISTS.has(key) && Array.isArray(value)) return value.map((v) => toJsonSchema(v, dialect));
  if (SCHEMA_ONE.has(key)) {
    return Array.isArray(value) ? value.map((v) => toJsonSchema(v, dialect)) : toJsonSchema(value, dialect);
  }
  return value;
}

function leaveOutReadOnly(schema: Record<string, unknown>): void {
  const properties = schema.properties;
  if (!isRecord(properties)) return;
  const readOnly = Object.keys(properties).filter((k) => isRecord(properties[k]) && properties[k].readOnly === true);
  if (readOnly.length === 0) return;
  schema.properties = Object.fromEntries(Object.entries(properties).filter(([k]) => !readOnly.includes(k)));
  if (Array.isArray(schema.required)) {
    schema.required = schema.required.filter((k) => !readOnly.includes(k as string));
  }
}

/** 3.0 (draft 4): `exclusiveMinimum: true` qualifies `minimum`; JSON Schema now gives the bound itself. */
function exclusiveBound(schema: Record<string, unknown>, exclusive: string, bound: string): void {
  if (typeof schema[exclusive] !== 'boolean') return;
  if (schema[exclusive] === true && typeof schema[bound] === 'number') {
    schema[exclusive] = schema[bound];
    delete schema[bound];
  } else {
    delete schema[exclusive];
  }
}

function nullable(schema: Record<string, unknown>): Record<string, unknown> {
  const { type } = schema;
  if (typeof type === 'string' || Array.isArray(type)) {
    const types: unknown[] = Array.isArray(type) ? type : [type];
    const out: Record<string, unknown> = { ...schema, type: types.includes('null') ? types : [...types, 'null'] };
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) out.enum = [...(schema.enum as unknown[]), null];
    return out;
  }
  if (Object.keys(schema).length === 0) return schema;
  return { anyOf: [schema, { type: 'null' }] };
}
