/**
 * The committed OpenAPI spec, read the way a generated client or a
 * schema-driven tester (Schemathesis) reads it: which operation a concrete
 * request is, which statuses it declares, and whether a value is valid
 * under a schema. The validator knows the OpenAPI 3.0 keywords this spec
 * uses (test/http/openapi-truth.test.ts fails on any other), so a keyword
 * added to the spec later cannot pass unchecked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './db-server';

export interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  /** Every member holds (tsoa writes a nullable reference as `{ allOf: [$ref], nullable: true }`). */
  allOf?: Schema[];
  not?: Schema;
  nullable?: boolean;
  description?: string;
  [key: string]: unknown;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: Schema;
}

export interface Operation {
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, ResponseObject>;
}

export interface Spec {
  security?: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses?: Record<string, ResponseObject> };
}

export const spec = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as Spec;

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

export interface SpecOperation {
  method: string;
  path: string;
  op: Operation;
}

export const operations: SpecOperation[] = Object.entries(spec.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ method, path, op })),
);

export function isSecured(op: Operation): boolean {
  const security = op.security ?? spec.security ?? [];
  return security.length > 0 && security.every((r) => Object.keys(r).length > 0);
}

/** The spec's path template a concrete path is, preferring literal segments (as the routes do). */
export function templateOf(path: string): string | undefined {
  const segments = path.split('/');
  const candidates = Object.keys(spec.paths).filter((template) => {
    const parts = template.split('/');
    return parts.length === segments.length && parts.every((p, i) => p.startsWith('{') || p === segments[i]);
  });
  const literals = (t: string) => t.split('/').filter((p) => !p.startsWith('{')).length;
  return candidates.sort((a, b) => literals(b) - literals(a))[0];
}

export interface ResponseObject {
  $ref?: string;
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Schema }>;
}

/** A response, its `$ref` to components.responses followed. */
export function declaredResponse(response: ResponseObject): ResponseObject {
  if (!response.$ref) return response;
  const name = response.$ref.replace('#/components/responses/', '');
  const target = spec.components.responses?.[name];
  if (!target) throw new Error(`unresolved ${response.$ref}`);
  return target;
}

export function resolve(schema: Schema): Schema {
  let s = schema;
  while (s.$ref) {
    const name = s.$ref.replace('#/components/schemas/', '');
    const target = spec.components.schemas[name];
    if (!target) throw new Error(`unresolved ${s.$ref}`);
    s = target;
  }
  return s;
}

const KNOWN = new Set([
  '$ref',
  'type',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'allOf',
  'not',
  'nullable',
  // Annotations: they constrain nothing.
  'description',
  'format',
  'default',
  'example',
]);

/** Keywords of `schema` this validator does not know (so it would ignore them). */
export function unknownKeywords(schema: Schema): string[] {
  return Object.keys(schema).filter((k) => !KNOWN.has(k));
}

function typeOk(type: string, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      throw new Error(`unknown type ${type}`);
  }
}

/** Why `value` is invalid under `schema` (OpenAPI 3.0 semantics), or undefined when it is valid. */
export function invalidity(schema: Schema, value: unknown, at = 'body'): string | undefined {
  if (schema.$ref) return invalidity(resolve(schema), value, at);
  const unknown = unknownKeywords(schema);
  if (unknown.length > 0) throw new Error(`${at}: keywords the validator does not know: ${unknown.join(', ')}`);
  if (value === null) {
    // OpenAPI 3.0: null only where nullable (a schema without type takes anything).
    if (schema.type !== undefined && schema.nullable !== true) return `${at}: null`;
    if (schema.enum && !schema.enum.includes(null) && schema.nullable !== true) return `${at}: null`;
  } else if (schema.type !== undefined && !typeOk(schema.type, value)) {
    return `${at}: not ${schema.type}`;
  }
  if (schema.enum && value !== null && !schema.enum.includes(value)) return `${at}: not in enum`;
  if (typeof value === 'string') {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) return `${at}: pattern`;
    if (schema.minLength !== undefined && value.length < schema.minLength) return `${at}: minLength`;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `${at}: maxLength`;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return `${at}: minimum`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${at}: maximum`;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return `${at}: minItems`;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${at}: maxItems`;
    if (schema.items) {
      for (const [i, item] of value.entries()) {
        const why = invalidity(schema.items, item, `${at}[${i}]`);
        if (why) return why;
      }
    }
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!Object.hasOwn(record, name)) return `${at}.${name}: required`;
    for (const [key, child] of Object.entries(record)) {
      const declared = schema.properties?.[key];
      if (declared) {
        const why = invalidity(declared, child, `${at}.${key}`);
        if (why) return why;
      } else if (schema.additionalProperties === false) {
        return `${at}.${key}: not allowed`;
      } else if (typeof schema.additionalProperties === 'object') {
        const why = invalidity(schema.additionalProperties, child, `${at}.${key}`);
        if (why) return why;
      }
    }
  }
  if (schema.anyOf && schema.anyOf.every((s) => invalidity(s, value, at) !== undefined)) return `${at}: anyOf`;
  // A null where the schema is nullable is valid before its members are asked (OpenAPI 3.0).
  if (schema.allOf && !(value === null && schema.nullable === true)) {
    for (const member of schema.allOf) {
      const why = invalidity(member, value, at);
      if (why) return why;
    }
  }
  if (schema.not && invalidity(schema.not, value, at) === undefined) return `${at}: not`;
  return undefined;
}
