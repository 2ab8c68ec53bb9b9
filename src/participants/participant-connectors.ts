/**
 * The connector of a participant's transport, from what the store holds:
 * mcp-http and openapi through the address-guarded fetch (link-local and
 * metadata addresses refused, also after redirects and DNS), mcp-stdio as a
 * child spawned without a shell with only the given environment.
 */
import { canonicalJson, sha256Hex } from '../core/canonical-json';
import type { ToolLogger } from '../core/tool-interface';
import { createMcpHttpConnector, createMcpStdioConnector } from './mcp-upstream';
import { createOpenApiConnector } from './openapi-upstream';
import type { ParticipantRecord, ParticipantSecrets } from './participant-records';
import type { UpstreamConnector } from './upstream';

export interface ConnectorDeps {
  /** The address-guarded fetch (address-rules.ts). */
  fetch: typeof fetch;
  logger: ToolLogger;
}

export function makeConnector(
  record: ParticipantRecord,
  secrets: ParticipantSecrets,
  deps: ConnectorDeps,
): UpstreamConnector {
  const { config, name: participant } = record;
  const logger = deps.logger;
  switch (record.transport) {
    case 'mcp-http':
      return createMcpHttpConnector({
        participant,
        url: config.url!,
        headers: secrets.headers,
        fetch: deps.fetch,
        logger,
      });
    case 'mcp-stdio':
      return createMcpStdioConnector({
        participant,
        command: config.command!,
        args: config.args ?? [],
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        env: secrets.env,
        logger,
      });
    case 'openapi':
      return createOpenApiConnector({
        participant,
        ...(config.spec !== undefined ? { spec: config.spec } : {}),
        ...(config.specUrl !== undefined ? { specUrl: config.specUrl } : {}),
        ...(config.baseUrl !== undefined ? { baseUrl: config.baseUrl } : {}),
        headers: secrets.headers,
        fetch: deps.fetch,
        logger,
      });
  }
}

/**
 * What decides whether a change needs a new connection: the transport's
 * settings and secrets. Levels, include/exclude, description and timeout
 * only rebuild the tool.
 */
export function connectionKey(record: ParticipantRecord, secrets: ParticipantSecrets): string {
  // The secrets' digest, not their sealed text: sealing again (any PATCH) gives another text for the same values.
  const secretsDigest = sha256Hex(canonicalJson(secrets));
  return JSON.stringify([record.transport, record.config, secretsDigest, record.enabled]);
}
