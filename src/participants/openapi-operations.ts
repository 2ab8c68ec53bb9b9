/**
 * An OpenAPI document's operations as upstream tools. Each operation's input
 * schema is ONE object (API.md "Participants"): its path, query, header and
 * cookie parameters by name, beside the JSON body's top-level properties, or
 * the body under `body` when it is not a plain object schema or one of its
 * property names is a parameter's. What each argument is (a parameter and
 * where it goes, or the body) is kept beside the tool, for the call.
 */
import { isRecord } from '../core/tool-module';
import { defaultHttpLevel } from './action-names';
import type { OpenApiDocument } from './openapi-document';
import { toJsonSchema, type SchemaDialect } from './openapi-schema';
import type { UpstreamTool } from './upstream';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** OpenAPI: header parameters with these names "SHALL be ignored" (the transport owns them). */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

export type ParameterLocation = 'path' | 'query' | 'header' | 'cookie';

export interface OperationParameter {
  name: string;
  in: ParameterLocation;
  required: boolean;
  style?: string;
  explode?: boolean;
  /** Declared with `content` (a media type) rather than `schema`: sent as JSON text. */
  asJson: boolean;
}

export interface OperationBody {
  /** `spread`: the body's properties are top-level args; `wrapped`: the body is the `body` arg. */
  mode: 'spread' | 'wrapped';
  required: boolean;
  mediaType: string;
}

export interface OpenApiOperation {
  upstreamName: string;
  method: string;
  /** The path template as the document gives it: `/pets/{petId}`. */
  path: string;
  parameters: OperationParameter[];
  body?: OperationBody;
  tool: UpstreamTool;
}

export interface SkippedOperation {
  operation: string;
  reason: string;
}

/** Every operation of the document, in document order; those we cannot call are reported to `skip`. */
export function readOperations(doc: OpenApiDocument, skip: (s: SkippedOperation) => void): OpenApiOperation[] {
  const operations: OpenApiOperation[] = [];
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isRecord(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (!isRecord(operation)) continue;
      const upstreamName = nameOf(method, path, operation);
      try {
        if (seen.has(upstreamName)) throw new SkipReason('its operationId is used by an earlier operation');
        operations.push(readOperation({ doc, path, method, item, operation, upstreamName }));
        seen.add(upstreamName);
      } catch (err) {
        if (!(err instanceof SkipReason)) throw err;
        skip({ operation: upstreamName, reason: err.message });
      }
    }
  }
  return operations;
}

class SkipReason extends Error {}

function nameOf(method: string, path: string, operation: Record<string, unknown>): string {
  const id = operation.operationId;
  return typeof id === 'string' && id.trim() !== '' ? id : `${method.toUpperCase()} ${path}`;
}

interface OperationSource {
  doc: OpenApiDocument;
  path: string;
  method: string;
  item: Record<string, unknown>;
  operation: Record<string, unknown>;
  upstreamName: string;
}

function readOperation(src: OperationSource): OpenApiOperation {
  const dialect: SchemaDialect = { openapi30: src.doc.dialect30 };
  const declared = mergedParameters(src.item.parameters, src.operation.parameters);
  const { parameters, properties, required } = readParameters(src.path, declared, dialect);
  const { body, additionalProperties } = readBody(src.operation.requestBody, dialect, { properties, required });
  const inputSchema: Record<string, unknown> = { type: 'object', properties };
  if (required.length > 0) inputSchema.required = required;
  if (additionalProperties !== undefined) inputSchema.additionalProperties = additionalProperties;
  const method = src.method.toUpperCase();
  const description = [src.operation.summary, src.operation.description].filter((d) => typeof d === 'string');
  return {
    upstreamName: src.upstreamName,
    method,
    path: src.path,
    parameters,
    body,
    tool: {
      upstreamName: src.upstreamName,
      description: description.join('\n\n') || `${method} ${src.path}`,
      inputSchema,
      defaultLevel: defaultHttpLevel(method),
      definition: { method, path: src.path, operation: { ...src.operation, parameters: declared } },
    },
  };
}

interface ParametersSoFar {
  properties: Record<string, unknown>;
  required: string[];
}

function readParameters(
  path: string,
  declared: Record<string, unknown>[],
  dialect: SchemaDialect,
): ParametersSoFar & { parameters: OperationParameter[] } {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const parameters: OperationParameter[] = [];
  for (const p of withTemplateParameters(path, declared)) {
    const parameter = readParameter(path, p);
    if (!parameter) continue;
    if (Object.hasOwn(properties, parameter.name)) {
      throw new SkipReason(`two parameters are named "${parameter.name}"`);
    }
    parameters.push(parameter);
    properties[parameter.name] = parameterSchema(p, dialect);
    if (parameter.required) required.push(parameter.name);
  }
  return { parameters, properties, required };
}

/** Path-item parameters, overridden by the operation's own of the same name and location. */
function mergedParameters(pathLevel: unknown, operationLevel: unknown): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  for (const list of [pathLevel, operationLevel]) {
    if (!Array.isArray(list)) continue;
    for (const p of list) {
      if (isRecord(p) && typeof p.name === 'string') byKey.set(`${String(p.in)}:${p.name}`, p);
    }
  }
  return [...byKey.values()];
}

/** A `{name}` of the path template that no parameter declares is taken as a required string. */
function withTemplateParameters(path: string, declared: Record<string, unknown>[]): Record<string, unknown>[] {
  const inPath = new Set(declared.filter((p) => p.in === 'path').map((p) => p.name));
  const implicit = [...path.matchAll(/\{([^}]+)\}/g)]
    .map((m) => m[1]!)
    .filter((name) => !inPath.has(name))
    .map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  return [...declared, ...implicit];
}

/** HTTP's token: what a header (or cookie) name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function readParameter(path: string, p: Record<string, unknown>): OperationParameter | undefined {
  const location = p.in;
  if (location !== 'path' && location !== 'query' && location !== 'header' && location !== 'cookie') return undefined;
  const name = p.name as string;
  // A path parameter the template does not use could not be sent anywhere.
  if (location === 'path' && !path.includes(`{${name}}`)) return undefined;
  if (location === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) return undefined;
  if (name === '__proto__' || ((location === 'header' || location === 'cookie') && !TOKEN.test(name))) {
    throw new SkipReason(`its ${location} parameter "${name}" has a name that cannot be sent`);
  }
  return {
    name,
    in: location,
    required: location === 'path' || p.required === true,
    style: typeof p.style === 'string' ? p.style : undefined,
    explode: typeof p.explode === 'boolean' ? p.explode : undefined,
    asJson: p.schema === undefined && isRecord(p.content),
  };
}

function parameterSchema(p: Record<string, unknown>, dialect: SchemaDialect): unknown {
  const media = isRecord(p.content) ? Object.values(p.content)[0] : undefined;
  const source = p.schema ?? (isRecord(media) ? media.schema : undefined) ?? {};
  const schema = toJsonSchema(source, dialect);
  if (typeof p.description === 'string' && isRecord(schema) && schema.description === undefined) {
    return { ...schema, description: p.description };
  }
  return schema;
}

/** Adds the JSON body to the input schema (spread or under `body`); an operation whose body is not JSON is skipped. */
function readBody(
  requestBody: unknown,
  dialect: SchemaDialect,
  into: ParametersSoFar,
): { body?: OperationBody; additionalProperties?: unknown } {
  if (!isRecord(requestBody)) return { additionalProperties: false };
  const bodyRequired = requestBody.required === true;
  const content = isRecord(requestBody.content) ? requestBody.content : {};
  const mediaType = Object.keys(content).find(isJsonMediaTypeKey);
  if (!mediaType) {
    const types = Object.keys(content).join(', ') || 'none';
    if (bodyRequired) throw new SkipReason(`its request body is not JSON (${types})`);
    return { additionalProperties: false };
  }
  const media = content[mediaType];
  const schema = toJsonSchema(isRecord(media) ? media.schema : undefined, dialect);
  const names = isRecord(schema) && isRecord(schema.properties) ? Object.keys(schema.properties) : [];
  if (isRecord(schema) && isPlainObjectSchema(schema) && !names.some((n) => Object.hasOwn(into.properties, n))) {
    Object.assign(into.properties, schema.properties);
    const bodyRequiredNames = Array.isArray(schema.required) ? (schema.required as string[]) : [];
    if (bodyRequired) into.required.push(...bodyRequiredNames);
    return {
      body: { mode: 'spread', required: bodyRequired, mediaType },
      additionalProperties: schema.additionalProperties,
    };
  }
  if (Object.hasOwn(into.properties, 'body')) {
    throw new SkipReason('its body would go under "body", which is also a parameter\'s name');
  }
  into.properties.body = schema;
  if (bodyRequired) into.required.push('body');
  return { body: { mode: 'wrapped', required: bodyRequired, mediaType }, additionalProperties: false };
}

function isJsonMediaTypeKey(key: string): boolean {
  return /^application\/([\w.!#$&^-]+\+)?json(\s*;.*)?$/i.test(key.trim());
}

/** `type: object` with properties and nothing that makes "its top-level properties" ambiguous. */
function isPlainObjectSchema(schema: Record<string, unknown>): boolean {
  const ambiguous = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'patternProperties', 'unevaluatedProperties', '$ref'];
  return schema.type === 'object' && isRecord(schema.properties) && !ambiguous.some((k) => k in schema);
}
