/**
 * The openapi transport's documents (what is refused, and why, with a safe
 * message), its headers (secrets stay on the API's origin, per-owner headers
 * replace the participant's) and its refresh, against a real node:http API.
 */
import {
  createOpenApiConnector,
  OpenApiDocumentError,
  type OpenApiConnectorOptions,
} from '../../src/participants/openapi-upstream';
import { UpstreamUnavailableError, type UpstreamConnector } from '../../src/participants/upstream';
import { petsDocument30, petsDocument31, startPetsApi, type PetsApi } from './openapi-fixtures';

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const signal = new AbortController().signal;

let api: PetsApi;
let other: PetsApi;
beforeAll(async () => {
  [api, other] = await Promise.all([startPetsApi(), startPetsApi()]);
});
afterAll(() => Promise.all([api.close(), other.close()]));

async function started(options: Partial<OpenApiConnectorOptions>): Promise<UpstreamConnector> {
  const connector = createOpenApiConnector({ participant: 'pets', logger, ...options });
  await connector.start();
  return connector;
}

const refused = (options: Partial<OpenApiConnectorOptions>) => expect(started(options)).rejects;
const minimal = (extra: object = {}) => ({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, ...extra });

describe('documents that are refused', () => {
  it('refuses what is not OpenAPI 3.0 or 3.1', async () => {
    await refused({ spec: { swagger: '2.0', paths: {} }, baseUrl: api.url }).toThrow(
      new OpenApiDocumentError('Swagger 2.0 documents are not supported: convert it to OpenAPI 3.0 or 3.1'),
    );
    for (const openapi of ['2.0', '4.0.0', 3.1, undefined]) {
      await refused({ spec: minimal({ openapi }), baseUrl: api.url }).toThrow(
        'The document is not OpenAPI 3.0.x or 3.1.x (its "openapi" field)',
      );
    }
    await refused({ spec: minimal({ paths: [] }), baseUrl: api.url }).toBeInstanceOf(OpenApiDocumentError);
  });

  it('refuses $refs outside the document, or pointing nowhere', async () => {
    const op = (ref: string) => ({ '/x': { get: { parameters: [{ $ref: ref }], responses: {} } } });
    await refused({ spec: minimal({ paths: op('https://evil.example/p.json#/x') }), baseUrl: api.url }).toThrow(
      'points outside the document: only local references (#/components/...) are supported',
    );
    await refused({ spec: minimal({ paths: op('#/components/parameters/Nope') }), baseUrl: api.url }).toThrow(
      new OpenApiDocumentError('The OpenAPI document\'s $ref "#/components/parameters/Nope" points nowhere'),
    );
  });

  it('refuses a document that expands without bound once its $refs are resolved', async () => {
    const schemas: Record<string, object> = { s0: { type: 'string' } };
    for (let i = 1; i <= 8; i++) {
      const props = Object.fromEntries(
        [...Array(10).keys()].map((k) => [`p${k}`, { $ref: `#/components/schemas/s${i - 1}` }]),
      );
      schemas[`s${i}`] = { type: 'object', properties: props };
    }
    const spec = minimal({ components: { schemas } });
    await refused({ spec, baseUrl: api.url }).toThrow('expands past 200000 nodes');
  });

  it('needs a server URL it can use', async () => {
    await refused({ spec: minimal() }).toThrow('The OpenAPI document has no servers[0].url: give baseUrl');
    await refused({ spec: minimal({ servers: [{ url: '/api' }] }) }).toThrow(
      "The OpenAPI document's servers[0].url is relative and the document was given inline: give baseUrl",
    );
    await refused({ spec: minimal({ servers: [{ url: 'https://{region}.example' }] }) }).toThrow(
      'server variable "region" has no default',
    );
    await refused({ spec: minimal(), baseUrl: 'file:///etc/passwd' }).toThrow('baseUrl must be an http or https URL');
    await refused({ spec: minimal({ servers: [{ url: 'ftp://example.com' }] }) }).toThrow(
      'servers[0].url must be an http or https URL',
    );
  });

  it('tells a missing or unparsable document at specUrl from an unavailable one', async () => {
    await refused({ specUrl: `${api.url}/no-such-document.json` }).toThrow(
      new OpenApiDocumentError("Participant pets's specUrl answered HTTP 404"),
    );
    api.served.set('/bad.yaml', { type: 'application/yaml', text: 'openapi: [3.1\n  : :' });
    await refused({ specUrl: `${api.url}/bad.yaml` }).toThrow('The OpenAPI document at specUrl is not valid YAML');
    api.served.set('/down.json', { type: 'application/json', text: '{}', status: 503 });
    await refused({ specUrl: `${api.url}/down.json` }).toBeInstanceOf(UpstreamUnavailableError);
  });
});

describe('headers and secrets', () => {
  const secret = { 'X-Api-Key': 'participant-secret' };

  it("sends the participant headers to the API, an owner's headers instead when given", async () => {
    const connector = await started({ spec: petsDocument30(), baseUrl: api.url, headers: secret });
    await connector.call('getPet', { petId: '1' }, { signal, timeoutMs: 5000 });
    expect(api.seen.at(-1)!.headers['x-api-key']).toBe('participant-secret');
    await connector.call(
      'getPet',
      { petId: '1' },
      { signal, timeoutMs: 5000, headers: { Authorization: 'Bearer owner' } },
    );
    expect(api.seen.at(-1)!.headers).toMatchObject({ authorization: 'Bearer owner' });
    expect(api.seen.at(-1)!.headers['x-api-key']).toBeUndefined();
  });

  it('follows a redirect to another origin without the secret headers', async () => {
    api.served.set('/moved', { type: 'text/plain', text: '', status: 307, location: `${other.url}/pets/9` });
    const spec = minimal({ paths: { '/moved': { get: { operationId: 'moved', responses: {} } } } });
    const connector = await started({ spec, baseUrl: api.url, headers: secret });
    const result = await connector.call('moved', {}, { signal, timeoutMs: 5000 });
    expect(result.output).toEqual({ status: 200, body: { id: '9' } });
    expect(api.seen.at(-1)!.headers['x-api-key']).toBe('participant-secret');
    expect(other.seen.at(-1)!.headers['x-api-key']).toBeUndefined();
  });

  it("sends the headers to specUrl only on the API's origin", async () => {
    api.served.set('/secret.json', { type: 'application/json', text: JSON.stringify(petsDocument31()) });
    await started({ specUrl: `${api.url}/secret.json`, headers: secret });
    expect(api.seen.at(-1)!.headers['x-api-key']).toBe('participant-secret');
    await started({ specUrl: `${api.url}/secret.json`, baseUrl: other.url, headers: secret });
    expect(api.seen.at(-1)!.headers['x-api-key']).toBeUndefined();
  });
});

describe('reading operations', () => {
  it('reads specUrl again on each listing after the first (a refresh)', async () => {
    api.served.set('/changing.json', { type: 'application/json', text: JSON.stringify(petsDocument31()) });
    const connector = await started({ specUrl: `${api.url}/changing.json` });
    const fetches = () => api.seen.filter((s) => s.url === '/changing.json').length;
    expect(await connector.listTools()).toHaveLength(10);
    expect(fetches()).toBe(1);
    const changed = petsDocument31();
    delete (changed.paths as Record<string, unknown>)['/big'];
    api.served.set('/changing.json', { type: 'application/json', text: JSON.stringify(changed) });
    expect((await connector.listTools()).map((t) => t.upstreamName)).not.toContain('big');
    expect(fetches()).toBe(2);
  });

  it('puts the body under `body` when a property collides with a parameter; keeps 3.1 $ref siblings; sends cookies', async () => {
    const spec = minimal({
      paths: {
        '/pets': {
          post: {
            operationId: 'create',
            parameters: [
              { name: 'name', in: 'query', schema: { type: 'string' } },
              { name: 'session', in: 'cookie', required: true, schema: { type: 'string' } },
              { name: 'Accept', in: 'header', schema: { type: 'string' } },
            ],
            requestBody: {
              content: { 'application/json': { schema: { $ref: '#/components/schemas/P', description: 'Here' } } },
            },
            responses: {},
          },
        },
      },
      components: { schemas: { P: { type: 'object', properties: { name: { type: 'string' } } } } },
    });
    const connector = await started({ spec, baseUrl: api.url });
    const [tool] = await connector.listTools();
    expect(tool!.inputSchema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string' },
        session: { type: 'string' },
        body: { type: 'object', properties: { name: { type: 'string' } }, description: 'Here' },
      },
      required: ['session'],
      additionalProperties: false,
    });
    const result = await connector.call(
      'create',
      { name: 'q', session: 'a b', body: { name: 'b' } },
      { signal, timeoutMs: 5000 },
    );
    expect(result.output).toEqual({ status: 201, body: { created: { name: 'b' } } });
    expect(api.seen.at(-1)).toMatchObject({ url: '/pets?name=q', headers: { cookie: 'session=a%20b' } });
  });
});
