/**
 * A small pets API on node:http for the openapi transport's tests, and the
 * same API described twice: by an OpenAPI 3.0 document (nullable, $ref'd
 * components) and a 3.1 one (type arrays). The server records what it was
 * sent, and when a request's connection closed before it answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface PetsApi {
  url: string;
  seen: Seen[];
  /** Documents served at /openapi.json, /openapi-31.yaml (text set by the test) and /redirect-to (Location). */
  served: Map<string, { type: string; text: string; status?: number; location?: string }>;
  /** Resolves when a request to /slow has had its connection closed by the client. */
  slowClosed(): Promise<void>;
  close(): Promise<void>;
}

export async function startPetsApi(): Promise<PetsApi> {
  const seen: Seen[] = [];
  const served = new Map<string, { type: string; text: string; status?: number; location?: string }>();
  let slowClosedResolve: () => void = () => undefined;
  let slowClosedPromise = new Promise<void>((r) => (slowClosedResolve = r));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const doc = served.get(new URL(req.url ?? '/', 'http://x').pathname);
      if (doc) {
        const headers: Record<string, string> = { 'content-type': doc.type };
        if (doc.location) headers.location = doc.location;
        res.writeHead(doc.status ?? 200, headers).end(doc.text);
        return;
      }
      if (req.url === '/slow') {
        res.on('close', () => slowClosedResolve());
        return; // never answers
      }
      route(req, res, body);
    });
  });
  await listen(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    served,
    slowClosed: async () => {
      await slowClosedPromise;
      slowClosedPromise = new Promise<void>((r) => (slowClosedResolve = r));
    },
    close: () => closeServer(server),
  };
}

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const json = (status: number, value: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  };
  const petId = /^\/pets\/([^/]+)$/.exec(url.pathname)?.[1];
  if (req.method === 'GET' && url.pathname === '/pets') {
    return json(200, { query: [...url.searchParams.entries()], requestId: req.headers['x-request-id'] ?? null });
  }
  if (req.method === 'GET' && petId) {
    return petId === '404'
      ? json(404, { error: 'no such pet', secret: 's3cr3t' })
      : json(200, { id: decodeURIComponent(petId) });
  }
  if (req.method === 'POST' && url.pathname === '/pets') return json(201, { created: JSON.parse(body) as unknown });
  if (req.method === 'PUT' && /^\/pets\/[^/]+\/tags$/.test(url.pathname)) return json(200, JSON.parse(body));
  if (req.method === 'DELETE' && petId) return void res.writeHead(204).end();
  if (url.pathname === '/broken') return json(503, { error: 'database password is hunter2' });
  if (url.pathname === '/text') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello pets');
  if (url.pathname === '/big')
    return void res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(2 ** 21));
  json(404, { error: 'not found' });
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port that was just free: nothing listens there, so connecting is refused. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await listen(server);
  const { port } = server.address() as AddressInfo;
  await closeServer(server);
  return `http://127.0.0.1:${port}`;
}

const operations = (petSchema: object, nullableTag: object) => ({
  '/pets': {
    get: {
      operationId: 'listPets',
      summary: 'List pets',
      parameters: [
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1 } },
        { name: 'tag', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
        { name: 'filter', in: 'query', style: 'deepObject', schema: { type: 'object' } },
        { name: 'where', in: 'query', schema: { type: 'object' } },
        { name: 'X-Request-Id', in: 'header', schema: { type: 'string' } },
      ],
      responses: { '200': { description: 'ok' } },
    },
    post: {
      operationId: 'createPet',
      requestBody: { $ref: '#/components/requestBodies/NewPet' },
      responses: { '201': { description: 'created' } },
    },
  },
  '/pets/{petId}': {
    parameters: [{ $ref: '#/components/parameters/PetId' }],
    get: { operationId: 'getPet', description: 'One pet', responses: { '200': { description: 'ok' } } },
    delete: { responses: { '204': { description: 'gone' } } },
  },
  '/pets/{petId}/tags': {
    put: {
      operationId: 'setTags',
      parameters: [{ $ref: '#/components/parameters/PetId' }],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'array', items: nullableTag } } },
      },
      responses: { '200': { description: 'ok' } },
    },
  },
  '/pets/{petId}/photo': {
    post: {
      operationId: 'uploadPhoto',
      requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object' } } } },
      responses: { '200': { description: 'ok' } },
    },
  },
  '/broken': { get: { operationId: 'broken', responses: { '503': { description: 'down' } } } },
  '/slow': { get: { operationId: 'slow', responses: { '200': { description: 'never' } } } },
  '/text': { get: { operationId: 'text', responses: { '200': { description: 'text' } } } },
  '/big': { get: { operationId: 'big', responses: { '200': { description: 'two MiB' } } } },
  '/trees': {
    post: {
      operationId: 'plantTree',
      requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Tree' } } } },
      responses: { '200': { description: 'ok' } },
    },
  },
  _pet: petSchema,
});

function document(version: string, pet: object, nullableTag: object, servers: object[]): Record<string, unknown> {
  const { _pet, ...paths } = operations(pet, nullableTag);
  return {
    openapi: version,
    info: { title: 'Pets', version: '1.2.3' },
    servers,
    paths,
    components: {
      schemas: {
        Pet: _pet,
        Tree: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            children: { type: 'array', items: { $ref: '#/components/schemas/Tree' } },
          },
        },
      },
      parameters: { PetId: { name: 'petId', in: 'path', required: true, schema: { type: 'string' } } },
      requestBodies: {
        NewPet: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } },
      },
    },
  };
}

/** OpenAPI 3.0: `nullable`, `example`, a readOnly id, a boolean exclusiveMinimum. */
export function petsDocument30(servers: object[] = [{ url: '/' }]): Record<string, unknown> {
  const pet = {
    type: 'object',
    required: ['id', 'name'],
    properties: {
      id: { type: 'string', readOnly: true },
      name: { type: 'string', example: 'Rex' },
      tag: { type: 'string', nullable: true, enum: ['dog', 'cat'] },
      age: { type: 'number', minimum: 0, exclusiveMinimum: true },
    },
  };
  return document('3.0.3', pet, { type: 'string', nullable: true }, servers);
}

/** OpenAPI 3.1: type arrays, numeric exclusiveMinimum. */
export function petsDocument31(servers: object[] = [{ url: '/' }]): Record<string, unknown> {
  const pet = {
    type: 'object',
    required: ['id', 'name'],
    properties: {
      id: { type: 'string', readOnly: true },
      name: { type: 'string', examples: ['Rex'] },
      tag: { type: ['string', 'null'], enum: ['dog', 'cat', null] },
      age: { type: 'number', exclusiveMinimum: 0 },
    },
  };
  return document('3.1.0', pet, { type: ['string', 'null'] }, servers);
}
