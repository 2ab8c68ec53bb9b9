/**
 * OpenAPI schemas as JSON Schema (3.0's dialect converted) and the local
 * `$ref` resolver: cycles of any shape end, and leave no `$ref` behind.
 */
import fc from 'fast-check';
import { OpenApiDocumentError } from '../../src/participants/openapi-http';
import { resolveLocalRefs } from '../../src/participants/openapi-refs';
import { toJsonSchema } from '../../src/participants/openapi-schema';

const v30 = { openapi30: true };
const v31 = { openapi30: false };

describe('toJsonSchema', () => {
  it('turns 3.0 nullable into a null type, an enum with null, or an anyOf', () => {
    expect(toJsonSchema({ type: 'integer', nullable: true }, v30)).toEqual({ type: ['integer', 'null'] });
    expect(toJsonSchema({ type: 'string', enum: ['a'], nullable: true }, v30)).toEqual({
      type: ['string', 'null'],
      enum: ['a', null],
    });
    expect(toJsonSchema({ allOf: [{ type: 'object' }], nullable: true }, v30)).toEqual({
      anyOf: [{ allOf: [{ type: 'object' }] }, { type: 'null' }],
    });
    expect(toJsonSchema({ type: 'string', nullable: false }, v30)).toEqual({ type: 'string' });
    // In 3.1 `nullable` means nothing: dropped, not applied.
    expect(toJsonSchema({ type: 'string', nullable: true }, v31)).toEqual({ type: 'string' });
  });

  it('turns 3.0 boolean exclusive bounds into numbers', () => {
    expect(toJsonSchema({ type: 'number', minimum: 1, exclusiveMinimum: true }, v30)).toEqual({
      type: 'number',
      exclusiveMinimum: 1,
    });
    expect(toJsonSchema({ type: 'number', maximum: 9, exclusiveMaximum: false }, v30)).toEqual({
      type: 'number',
      maximum: 9,
    });
  });

  it('converts nested schemas, drops what validators do not know, leaves readOnly properties out of requests', () => {
    const schema = {
      type: 'object',
      'x-internal': true,
      discriminator: { propertyName: 'kind' },
      required: ['id', 'items'],
      properties: {
        id: { type: 'string', readOnly: true },
        items: { type: 'array', items: { type: 'string', nullable: true, example: 'a', xml: { name: 'i' } } },
        extra: { oneOf: [{ type: 'integer', nullable: true }, { type: 'boolean' }] },
      },
      additionalProperties: { type: 'number', nullable: true },
    };
    expect(toJsonSchema(schema, v30)).toEqual({
      type: 'object',
      required: ['items'],
      properties: {
        items: { type: 'array', items: { type: ['string', 'null'], examples: ['a'] } },
        extra: { oneOf: [{ type: ['integer', 'null'] }, { type: 'boolean' }] },
      },
      additionalProperties: { type: ['number', 'null'] },
    });
    expect(toJsonSchema(true, v31)).toBe(true);
  });
});

describe('resolveLocalRefs', () => {
  it('follows JSON pointers with escapes, and array indexes', () => {
    const doc = {
      components: { schemas: { 'a/b': { type: 'string' }, 'c~d': { type: 'integer' } } },
      list: [{ type: 'boolean' }],
      use: [
        { $ref: '#/components/schemas/a~1b' },
        { $ref: '#/components/schemas/c~0d' },
        { $ref: '#/list/0' },
        { $ref: '#/components/schemas/a%7E1b' },
      ],
    };
    expect(resolveLocalRefs(doc, { keepSiblings: false }).use).toEqual([
      { type: 'string' },
      { type: 'integer' },
      { type: 'boolean' },
      { type: 'string' },
    ]);
  });

  it('refuses a "__proto__" key', () => {
    const doc = JSON.parse('{"components":{"schemas":{"__proto__":{"type":"string"}}}}') as Record<string, unknown>;
    expect(() => resolveLocalRefs(doc, { keepSiblings: true })).toThrow(OpenApiDocumentError);
  });

  it('ends on any graph of references and leaves no $ref behind', () => {
    const graph = fc.array(fc.array(fc.nat(5), { maxLength: 3 }), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(graph, fc.boolean(), (edges, keepSiblings) => {
        const schemas = Object.fromEntries(
          edges.map((targets, i) => [
            `s${i}`,
            {
              type: 'object',
              properties: Object.fromEntries(
                targets.map((t, k) => [`p${k}`, { $ref: `#/components/schemas/s${t % edges.length}` }]),
              ),
            },
          ]),
        );
        const resolved = resolveLocalRefs({ components: { schemas } }, { keepSiblings });
        expect(JSON.stringify(resolved)).not.toContain('"$ref"');
      }),
    );
  });
});
