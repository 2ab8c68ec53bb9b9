/**
 * The openapi transport against a real HTTP API (node:http on port 0),
 * described by a 3.0 and a 3.1 document, given inline and by specUrl.
 */
import { stringify as toYaml } from 'yaml';
import { createOpenApiConnector, type OpenApiConnectorOptions } from '../../src/participants/openapi-upstream';
import { createGuardedFetch, type GuardedFetch } from '../../src/participants/address-rules';
import {
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  type UpstreamConnector,
} from '../../src/participants/upstream';
import { petsDocument30, petsDocument31, refusedUrl, startPetsApi, type PetsApi } from './openapi-fixtures';

const warnings: object[] = [];
const logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (obj: object | string) => void warnings.push(typeof obj === 'string' ? { msg: obj } : obj),
  error: () => undefined,
};

let api: PetsApi;
/** The fetch the service passes: it refuses link-local and metadata addresses, also after redirects. */
let guarded: GuardedFetch;
beforeAll(async () => {
  guarded = createGuardedFetch({ allowedHosts: [] });
  api = await startPetsApi();
  api.served.set('/openapi.json', { type: 'application/json', text: JSON.stringify(petsDocument30()) });
  api.served.set('/v31/openapi.yaml', { type: 'application/yaml', text: toYaml(petsDocument31([{ url: '../' }])) });
});
afterAll(() => Promise.all([api.close(), guarded.close()]));

const call = (c: UpstreamConnector, name: string, args: Record<string, unknown> = {}, timeoutMs = 5000) =>
  c.call(name, args, { signal: new AbortController().signal, timeoutMs });

async function started(options: Partial<OpenApiConnectorOptions>): Promise<UpstreamConnector> {
  const connector = createOpenApiConnector({ participant: 'pets', logger, ...options });
  await connector.start();
  return connector;
}

const variants = [
  ['3.0 inline', () => ({ spec: petsDocument30(), baseUrl: api.url })],
  ['3.0 by specUrl (JSON)', () => ({ specUrl: `${api.url}/openapi.json` })],
  ['3.0 by specUrl through the guarded fetch', () => ({ specUrl: `${api.url}/openapi.json`, fetch: guarded })],
  ['3.1 inline', () => ({ spec: petsDocument31([{ url: '{scheme}://{host}', variables: vars() }]) })],
  ['3.1 by specUrl (YAML, relative server)', () => ({ specUrl: `${api.url}/v31/openapi.yaml` })],
] as const;
const vars = () => ({ scheme: { default: 'http' }, host: { default: new URL(api.url).host } });

describe.each(variants)('OpenAPI %s', (_label, options) => {
  let connector: UpstreamConnector;
  beforeAll(async () => {
    connector = await started(options());
  });

  it('lists one tool per operation, with names, levels and one input schema', async () => {
    const tools = await connector.listTools();
    const byName = new Map(tools.map((t) => [t.upstreamName, t]));
    expect([...byName.keys()]).toEqual([
      'listPets',
      'createPet',
      'getPet',
      'DELETE /pets/{petId}',
      'setTags',
      'broken',
      'slow',
      'text',
      'big',
      'plantTree',
    ]);
    expect(warnings).toContainEqual(
      expect.objectContaining({ operation: 'uploadPhoto', reason: expect.stringContaining('multipart/form-data') }),
    );
    expect(tools.map((t) => [t.upstreamName, t.defaultLevel]).slice(0, 5)).toEqual([
      ['listPets', 1],
      ['createPet', 2],
      ['getPet', 1],
      ['DELETE /pets/{petId}', 3],
      ['setTags', 2],
    ]);
    expect(byName.get('listPets')!.description).toBe('List pets');
    expect(byName.get('getPet')!.inputSchema).toEqual({
      type: 'object',
      properties: { petId: { type: 'string' } },
      required: ['petId'],
      additionalProperties: false,
    });
    const create = byName.get('createPet')!;
    expect(create.inputSchema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', examples: ['Rex'] },
        tag: { type: ['string', 'null'], enum: ['dog', 'cat', null] },
        age: { type: 'number', exclusiveMinimum: 0 },
      },
      required: ['name'],
    });
    expect(create.definition).toMatchObject({ method: 'POST', path: '/pets', operation: { operationId: 'createPet' } });
    expect(JSON.stringify(create.definition)).not.toContain('$ref');
    // A body that is not an object goes under `body`, beside the path parameter.
    expect(byName.get('setTags')!.inputSchema).toEqual({
      type: 'object',
      properties: { petId: { type: 'string' }, body: { type: 'array', items: { type: ['string', 'null'] } } },
      required: ['petId', 'body'],
      additionalProperties: false,
    });
    // A recursive schema is expanded once, then cut.
    expect(JSON.stringify(byName.get('plantTree')!.inputSchema)).toContain(
      'recursive reference #/components/schemas/Tree',
    );
    expect(connector.info()).toEqual({
      protocolVersion: expect.stringMatching(/^3\.[01]\./),
      serverInfo: { title: 'Pets', version: '1.2.3' },
    });
  });

  it('calls GET with query parameters (repeated keys, deepObject, JSON) and a header', async () => {
    const result = await call(connector, 'listPets', {
      limit: 2,
      tag: ['a b', 'c&d'],
      filter: { kind: 'dog' },
      where: { age: 3 },
      'X-Request-Id': 'r-1',
    });
    expect(result.isError).toBe(false);
    expect(result.output).toEqual({
      status: 200,
      body: {
        query: [
          ['limit', '2'],
          ['tag', 'a b'],
          ['tag', 'c&d'],
          ['filter[kind]', 'dog'],
          ['where', '{"age":3}'],
        ],
        requestId: 'r-1',
      },
    });
    expect(api.seen.at(-1)!.headers.accept).toBe('application/json');
  });

  it('calls GET with a percent-encoded path parameter, POST with a JSON body, PUT with a wrapped body, DELETE', async () => {
    expect((await call(connector, 'getPet', { petId: 'a/b c' })).output).toEqual({
      status: 200,
      body: { id: 'a/b c' },
    });
    expect(api.seen.at(-1)!.url).toBe('/pets/a%2Fb%20c');
    const created = await call(connector, 'createPet', { name: 'Rex', tag: null });
    expect(created).toEqual({ output: { status: 201, body: { created: { name: 'Rex', tag: null } } }, isError: false });
    expect(api.seen.at(-1)!.headers['content-type']).toBe('application/json');
    const tags = await call(connector, 'setTags', { petId: '7', body: ['x', null] });
    expect(tags.output).toEqual({ status: 200, body: ['x', null] });
    expect(api.seen.at(-1)).toMatchObject({ method: 'PUT', url: '/pets/7/tags' });
    expect(await call(connector, 'DELETE /pets/{petId}', { petId: '7' })).toEqual({
      output: { status: 204, body: null },
      isError: false,
    });
  });

  it('answers HTTP errors as error results with a safe message, text as text', async () => {
    const down = await call(connector, 'broken');
    expect(down).toEqual({
      output: { status: 503, body: { error: 'database password is hunter2' } },
      isError: true,
      errorMessage: 'Participant pets answered HTTP 503 for broken',
    });
    const missing = await call(connector, 'getPet', { petId: '404' });
    expect(missing.isError).toBe(true);
    expect(missing.errorMessage).toBe('Participant pets answered HTTP 404 for getPet');
    expect(await call(connector, 'text')).toEqual({ output: { status: 200, body: 'hello pets' }, isError: false });
    const big = await call(connector, 'big');
    expect(big).toMatchObject({
      output: { status: 200, body: null },
      isError: true,
      errorMessage: 'Participant pets answered more than 1048576 bytes for big',
    });
  });
});

describe('OpenAPI calls that do not finish', () => {
  it.each([
    ['global fetch', () => fetch],
    ['guarded fetch', () => guarded],
  ])('aborts a call past its timeout upstream and throws UpstreamTimeoutError (%s)', async (_label, fetchFn) => {
    const connector = await started({ spec: petsDocument30(), baseUrl: api.url, fetch: fetchFn() });
    const closed = api.slowClosed();
    const error = await call(connector, 'slow', {}, 200).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as Error).message).toBe('Participant pets did not answer slow within 200 ms');
    await closed; // the server saw the connection go
  });

  it("cancels upstream when the caller aborts, with the caller's reason", async () => {
    const connector = await started({ spec: petsDocument30(), baseUrl: api.url });
    const closed = api.slowClosed();
    const controller = new AbortController();
    const slowCalls = () => api.seen.filter((s) => s.url === '/slow').length;
    const before = slowCalls();
    const pending = connector.call('slow', {}, { signal: controller.signal, timeoutMs: 30_000 });
    await waitFor(() => slowCalls() > before);
    controller.abort(new Error('caller went away'));
    await expect(pending).rejects.toThrow('caller went away');
    await closed;
  });

  it('throws UpstreamUnavailableError when the API refuses connections', async () => {
    const connector = await started({ spec: petsDocument30(), baseUrl: await refusedUrl() });
    const error = await call(connector, 'getPet', { petId: '1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect((error as Error).message).toBe('Participant pets cannot be reached (getPet)');
    await expect(started({ specUrl: `${await refusedUrl()}/openapi.json` })).rejects.toBeInstanceOf(
      UpstreamUnavailableError,
    );
  });
});

async function waitFor(condition: () => boolean, deadlineMs = 5000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

describe('OpenAPI behind the guarded fetch', () => {
  const metadata = 'http://169.254.169.254/latest/meta-data/';

  it('refuses a specUrl that redirects to the metadata address', async () => {
    api.served.set('/to-metadata.json', { type: 'text/plain', text: '', status: 302, location: metadata });
    const start = started({ specUrl: `${api.url}/to-metadata.json`, fetch: guarded });
    await expect(start).rejects.toBeInstanceOf(UpstreamUnavailableError);
    await expect(start).rejects.toThrow('address refused: 169.254.169.254');
  });

  it('refuses a call that the API redirects to the metadata address', async () => {
    api.served.set('/moved-to-metadata', { type: 'text/plain', text: '', status: 307, location: metadata });
    const paths = { '/moved-to-metadata': { get: { operationId: 'sneaky', responses: {} } } };
    const spec = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths };
    const connector = await started({ spec, baseUrl: api.url, fetch: guarded });
    const error = await call(connector, 'sneaky').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect((error as Error).message).toBe('Participant pets cannot be reached (sneaky)');
  });
});
