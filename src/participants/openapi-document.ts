/**
 * An OpenAPI participant's document: loaded (inline, or fetched from specUrl
 * as JSON or YAML), checked to be OpenAPI 3.0.x or 3.1.x, its local `$ref`s
 * resolved in place, and the server URL calls go to worked out.
 * The `$ref` resolver is in openapi-refs.ts.
 */
import { parse as parseYaml } from 'yaml';
import {
  BodyTooLargeError,
  classifyFetchFailure,
  fetchUpstream,
  isJsonMediaType,
  OpenApiDocumentError,
  readBodyLimited,
} from './openapi-http';
import { UpstreamUnavailableError } from './upstream';
import { isRecord } from '../core/tool-module';
import { resolveLocalRefs } from './openapi-refs';

export { OpenApiDocumentError };

export interface OpenApiDocument {
  /** The `openapi` field as given ("3.0.3", "3.1.0"). */
  openapi: string;
  /** 3.0.x: schemas are OpenAPI's own dialect (nullable, boolean exclusiveMinimum), converted before use. */
  dialect30: boolean;
  info: { title?: string; version?: string };
  /** `paths` with every local `$ref` resolved. */
  paths: Record<string, unknown>;
  /** Where operations' paths are appended: no trailing slash. */
  serverUrl: string;
}

export interface LoadDocumentOptions {
  participant: string;
  spec?: object;
  specUrl?: string;
  baseUrl?: string;
  /** Sent with the GET of specUrl when it is on baseUrl's origin (or there is no baseUrl). */
  headers?: Record<string, string>;
  fetch: typeof fetch;
  timeoutMs: number;
}

/** A larger document is refused: a participant's operations are read on every refresh. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

export async function loadOpenApiDocument(options: LoadDocumentOptions): Promise<OpenApiDocument> {
  const raw = options.spec ?? (await fetchDocument(options));
  if (!isRecord(raw)) throw new OpenApiDocumentError('The OpenAPI document is not an object');
  const openapi = checkVersion(raw);
  const dialect30 = openapi.startsWith('3.0.');
  const resolved = resolveLocalRefs(raw, { keepSiblings: !dialect30 });
  const paths = resolved.paths ?? {};
  if (!isRecord(paths)) throw new OpenApiDocumentError('The OpenAPI document\'s "paths" is not an object');
  const info = isRecord(resolved.info) ? resolved.info : {};
  return {
    openapi,
    dialect30,
    info: { title: stringOrUndefined(info.title), version: stringOrUndefined(info.version) },
    paths,
    serverUrl: serverUrlOf(resolved, options),
  };
}

async function fetchDocument(options: LoadDocumentOptions): Promise<unknown> {
  const { specUrl, participant } = options;
  if (!specUrl) throw new OpenApiDocumentError('An OpenAPI participant needs spec or specUrl');
  const url = httpUrl(specUrl, 'specUrl');
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const headers = new Headers({ accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' });
  const credentials = sendHeadersTo(url, options) ? options.headers : undefined;
  let text: string;
  let contentType: string | null;
  try {
    const request = { url: url.href, method: 'GET', headers, credentials, signal: timeout };
    const response = await fetchUpstream(options.fetch, request);
    contentType = response.headers.get('content-type');
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      const message = `Participant ${participant}'s specUrl answered HTTP ${response.status}`;
      throw response.status >= 500 ? new UpstreamUnavailableError(message) : new OpenApiDocumentError(message);
    }
    text = (await readBodyLimited(response, MAX_DOCUMENT_BYTES)).toString('utf8');
  } catch (err) {
    if (err instanceof OpenApiDocumentError || err instanceof UpstreamUnavailableError) throw err;
    if (err instanceof BodyTooLargeError) {
      throw new OpenApiDocumentError(`The OpenAPI document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    const what = 'loading its OpenAPI document';
    const failure = classifyFetchFailure(err, { what, participant, timeout, timeoutMs: options.timeoutMs });
    // start() reports an upstream it cannot load as unavailable, whatever the cause.
    throw failure instanceof UpstreamUnavailableError ? failure : new UpstreamUnavailableError(failure.message);
  }
  return parseDocumentText(text, contentType);
}

/** JSON when it says so or looks like it, else YAML (which the `yaml` package parses with alias limits). */
function parseDocumentText(text: string, contentType: string | null): unknown {
  const json = isJsonMediaType(contentType) || text.trimStart().startsWith('{');
  try {
    return json ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch {
    throw new OpenApiDocumentError(`The OpenAPI document at specUrl is not valid ${json ? 'JSON' : 'YAML'}`);
  }
}

function sendHeadersTo(specUrl: URL, options: LoadDocumentOptions): boolean {
  if (!options.baseUrl) return true;
  try {
    return new URL(options.baseUrl).origin === specUrl.origin;
  } catch {
    return false;
  }
}

function checkVersion(doc: Record<string, unknown>): string {
  if (typeof doc.swagger === 'string') {
    throw new OpenApiDocumentError('Swagger 2.0 documents are not supported: convert it to OpenAPI 3.0 or 3.1');
  }
  const version = doc.openapi;
  if (typeof version !== 'string' || !/^3\.[01]\.\d+(-[\w.]+)?$/.test(version)) {
    throw new OpenApiDocumentError('The document is not OpenAPI 3.0.x or 3.1.x (its "openapi" field)');
  }
  return version;
}

/** baseUrl, else servers[0].url with its variables' defaults, relative to specUrl when relative. */
function serverUrlOf(doc: Record<string, unknown>, options: LoadDocumentOptions): string {
  if (options.baseUrl) return trimSlash(httpUrl(options.baseUrl, 'baseUrl').href);
  const server = Array.isArray(doc.servers) ? (doc.servers[0] as unknown) : undefined;
  if (!isRecord(server) || typeof server.url !== 'string') {
    throw new OpenApiDocumentError('The OpenAPI document has no servers[0].url: give baseUrl');
  }
  const expanded = expandVariables(server.url, server.variables);
  let url: URL;
  try {
    url = new URL(expanded, options.specUrl);
  } catch {
    throw new OpenApiDocumentError(
      options.specUrl
        ? "The OpenAPI document's servers[0].url is not a valid URL: give baseUrl"
        : "The OpenAPI document's servers[0].url is relative and the document was given inline: give baseUrl",
    );
  }
  return trimSlash(httpUrl(url.href, 'servers[0].url').href);
}

function expandVariables(template: string, variables: unknown): string {
  return template.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const variable = isRecord(variables) ? variables[name] : undefined;
    if (!isRecord(variable) || typeof variable.default !== 'string') {
      throw new OpenApiDocumentError(`The OpenAPI document's server variable "${name}" has no default`);
    }
    return variable.default;
  });
}

function httpUrl(value: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new OpenApiDocumentError(`${field} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OpenApiDocumentError(`${field} must be an http or https URL`);
  }
  return url;
}

function trimSlash(href: string): string {
  return href.replace(/\/+$/, '');
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
