/**
 * The `openapi` transport (API.md "Participants"): an HTTP API described by
 * an OpenAPI 3.0 or 3.1 document is a participant whose actions are its
 * operations. start() loads the document (openapi-document.ts), listTools()
 * reads its operations (openapi-operations.ts; with a specUrl, every listing
 * after the first reads the document again, which is what a refresh is),
 * call() sends one request (openapi-call.ts). Every request goes through the
 * fetch it is given: the service passes the guarded fetch, which refuses
 * link-local and metadata addresses after DNS and redirects.
 */
import type { ToolLogger } from '../core/tool-interface';
import { callOperation } from './openapi-call';
import { loadOpenApiDocument, type OpenApiDocument } from './openapi-document';
import { readOperations, type OpenApiOperation } from './openapi-operations';
import type {
  UpstreamCallOptions,
  UpstreamCallResult,
  UpstreamConnector,
  UpstreamInfo,
  UpstreamTool,
} from './upstream';

export { OpenApiDocumentError } from './openapi-http';

export interface OpenApiConnectorOptions {
  participant: string;
  /** The document inline; else specUrl is fetched (JSON or YAML). */
  spec?: object;
  specUrl?: string;
  /** Where calls go; else the document's servers[0].url. */
  baseUrl?: string;
  /** Secret: sent on every request to the API (and to specUrl on the same origin). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  logger: ToolLogger;
  /** How long loading the document may take. */
  loadTimeoutMs?: number;
}

/** Loading a document is one GET; longer than this and the upstream is taken as unavailable. */
export const DEFAULT_LOAD_TIMEOUT_MS = 10_000;

interface Loaded {
  document: OpenApiDocument;
  operations: Map<string, OpenApiOperation>;
}

/** The document, loaded (or taken as given) and read into its operations; one left out is logged with why. */
async function loadOperations(options: OpenApiConnectorOptions, fetchFn: typeof fetch): Promise<Loaded> {
  const document = await loadOpenApiDocument({
    participant: options.participant,
    spec: options.spec,
    specUrl: options.specUrl,
    baseUrl: options.baseUrl,
    headers: options.headers,
    fetch: fetchFn,
    timeoutMs: options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS,
  });
  const read = readOperations(document, ({ operation, reason }) =>
    options.logger.warn({ participant: options.participant, operation, reason }, 'OpenAPI operation left out'),
  );
  return { document, operations: new Map(read.map((op) => [op.upstreamName, op])) };
}

export function createOpenApiConnector(options: OpenApiConnectorOptions): UpstreamConnector {
  const fetchFn = options.fetch ?? fetch;
  let document: OpenApiDocument | undefined;
  let operations = new Map<string, OpenApiOperation>();
  /** start() just loaded the document: the first listing uses it rather than fetching it again. */
  let fresh = false;

  async function load(): Promise<OpenApiDocument> {
    ({ document, operations } = await loadOperations(options, fetchFn));
    return document;
  }

  return {
    transport: 'openapi',
    async start(): Promise<void> {
      await load();
      fresh = true;
    },
    async listTools(): Promise<UpstreamTool[]> {
      if (!document || (!fresh && options.specUrl && !options.spec)) await load();
      fresh = false;
      return [...operations.values()].map((op) => op.tool);
    },
    async call(
      upstreamName: string,
      args: Record<string, unknown>,
      call: UpstreamCallOptions,
    ): Promise<UpstreamCallResult> {
      const doc = document ?? (await load());
      const operation = operations.get(upstreamName);
      if (!operation) throw new Error(`Participant ${options.participant} has no operation ${upstreamName}`);
      const target = {
        participant: options.participant,
        serverUrl: doc.serverUrl,
        headers: options.headers,
        fetch: fetchFn,
      };
      return callOperation(operation, args, target, call);
    },
    onToolsChanged(): void {
      // OpenAPI has no notification: a refresh (listTools) reads the document again.
    },
    info(): UpstreamInfo {
      if (!document) return {};
      const { title, version } = document.info;
      return { protocolVersion: document.openapi, serverInfo: { title, version } };
    },
    async close(): Promise<void> {
      // Nothing held open: fetch's connection pool is the process's.
    },
  };
}
