/**
 * Readable messages for tsoa's validation failures. tsoa reports a value
 * outside a union of literals (`format=bogus`, `status=bogus`) as a dump of
 * every member it tried; the spec already says what is allowed, so the
 * message is made from the operation's own schema there: "must be one of
 * openai, anthropic, mcp, canonical". Other failures keep tsoa's message,
 * which the controllers' JSDoc tags word (`@isInt limit must be ...`).
 */
import type { ValidateError } from '@tsoa/runtime';
import type { FieldError } from './problem';

interface Schema {
  $ref?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
}
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}
export interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/**
 * The values of a union of single literals, from tsoa's dump of it
 * ("Could not match the union … should be one of the following; ['create'] …"),
 * when every member it tried was one literal: a nested field's enum (a
 * transaction operation's `op`), which enumOf does not reach.
 */
function literalsOf(message: string): string[] | undefined {
  if (!message.startsWith('Could not match the union')) return undefined;
  const values = [...message.matchAll(/should be one of the following; \['([^'\]]*)'\]/g)].map((m) => m[1]!);
  return values.length > 0 ? [...new Set(values)] : undefined;
}

/**
 * A transaction's operation (POST …/transactions), named as its other
 * refusals name it (API.md): `/operations/K`, the field first in the message.
 */
function operationError(path: string, message: string): FieldError | undefined {
  const m = /^operations\.\$(\d+)(?:\.(.+))?$/.exec(path);
  if (!m) return undefined;
  return { path: `/operations/${m[1]}`, message: m[2] ? `${m[2]}: ${message}` : message };
}

export class ParameterErrors {
  constructor(private readonly spec: OpenApiDocument) {}

  /**
   * tsoa's fields ({"format": {message}}, {"body.level": {message}}) as
   * [{path, message}], for the operation at `routePath` (express's
   * `/conversations/:id`) and `method`.
   */
  fieldErrors(err: ValidateError, method: string, routePath: string | undefined): FieldError[] {
    const operation = routePath === undefined ? undefined : this.operation(method, routePath);
    return Object.entries(err.fields).map(([key, f]) => {
      const path = key.replace(/^(requestBody|body)\.?/, '') || 'body';
      const allowed = (operation && this.enumOf(operation, key)) ?? literalsOf(f.message);
      const message = allowed ? `must be one of ${allowed.map(String).join(', ')}` : f.message;
      return operationError(path, message) ?? { path, message };
    });
  }

  private operation(method: string, routePath: string): Operation | undefined {
    const specPath = routePath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    return this.spec.paths?.[specPath]?.[method.toLowerCase()];
  }

  /** The allowed values of the field tsoa names `key`, when its schema is an enum. */
  private enumOf(operation: Operation, key: string): unknown[] | undefined {
    const bodyField = /^(?:requestBody|body)\.([^.]+)$/.exec(key);
    let schema: Schema | undefined;
    if (bodyField) {
      const body = this.resolve(operation.requestBody?.content?.['application/json']?.schema);
      const field = bodyField[1];
      schema = field === undefined ? undefined : body?.properties?.[field];
    } else {
      const lower = key.toLowerCase();
      schema = operation.parameters?.find((p) =>
        p.in === 'header' ? p.name.toLowerCase() === lower : p.name === key,
      )?.schema;
    }
    const values = this.resolve(schema)?.enum;
    return values && values.length > 0 ? values : undefined;
  }

  private resolve(schema: Schema | undefined): Schema | undefined {
    for (let depth = 0; schema?.$ref !== undefined && depth < 8; depth++) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(schema.$ref)?.[1];
      schema = name === undefined ? undefined : this.spec.components?.schemas?.[name];
    }
    return schema;
  }
}
