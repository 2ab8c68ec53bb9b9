/**
 * The rules about resources, written once for every way in: negotiate's
 * shared context, the REST endpoints and MCP. Names, the size limit, the
 * conditional writes of If-Match / If-None-Match (a list of versions), and
 * what each refusal says. Statements run through the ResourceStore port.
 */
import type { ConversationAccess } from './access';
import type { AuditService } from './audit';
import { openOnFirstUse } from './conversations';
import { AppError, conversationNotFound } from './errors';
import type { ConversationStore, ListResourcesOptions, ResourceStore } from './ports';
import type { Principal } from './principal';
import { ID_RULE, isValidId } from './resource-names';
import { TTL_RULE, isValidTtl } from './resource-ttl';
import { ToolError, type Resource } from './tool-interface';

/** A precondition: `*`, or the versions its entity tags name. */
export type Precondition = { any: true } | { versions: number[] };

/** The versions a precondition allows, as one list for one statement; undefined for none or `*`. */
export function versionsOf(match: Precondition | undefined): number[] | undefined {
  return match && 'versions' in match ? match.versions : undefined;
}

export class ResourceTooLargeError extends ToolError {
  constructor(bytes: number, max: number) {
    super('resource_too_large', `Resource data is ${bytes} bytes; the limit is ${max} bytes (RESOURCE_MAX_BYTES)`);
  }
}

export function assertResourceName(name: unknown): asserts name is string {
  if (!isValidId(name)) {
    throw new ToolError('invalid_args', `name: ${ID_RULE}`);
  }
}

/** `ttlSeconds` of a write's options (a tool's, as given: absent means none), or invalid_args. */
export function ttlSecondsOf(options: unknown): number | undefined {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') throw new ToolError('invalid_args', 'options: must be an object');
  const ttl = (options as { ttlSeconds?: unknown }).ttlSeconds;
  if (ttl === undefined) return undefined;
  if (!isValidTtl(ttl)) throw new ToolError('invalid_args', `ttlSeconds: ${TTL_RULE}`);
  return ttl;
}

/** The author of a resource written over REST. */
const CLIENT = 'client';

/** A conditional write of encoded data (ResourceService.put). */
export interface ResourceWrite {
  conversationId: string;
  name: string;
  /** The data's JSON text (encode()). */
  json: string;
  /** If-Match, If-None-Match. */
  match?: Precondition | undefined;
  noneMatch?: Precondition | undefined;
  /** Who writes: a tool's name, or `client`. */
  by: string;
  /** The owner of the conversation when this write creates it. */
  owner: string;
  /** Its expiry (checked: isValidTtl); absent, it has none. */
  ttlSeconds?: number | undefined;
}

/** A client's write over REST (PUT …/resources/{name}): by `client`, for the caller. */
export interface ClientWrite extends Omit<ResourceWrite, 'by' | 'owner'> {
  /** The request's X-Request-Id (the audit entry of a conversation created on first use). */
  requestId: string;
}

export class ResourceService {
  constructor(
    readonly store: ResourceStore,
    private readonly conversations: ConversationStore,
    readonly maxBytes: number,
    /** Who may read and write over REST (the `…As` methods), and their audit. */
    private readonly rest: { access: ConversationAccess; audit?: AuditService },
  ) {}

  /** GET …/resources: a page for `p` (not_found when the conversation does not exist). */
  async listAs(p: Principal, conversationId: string, opts: ListResourcesOptions): Promise<Resource[]> {
    await this.rest.access.check(p, conversationId, 'read-resources', 'read resources');
    return this.listOrNotFound(conversationId, opts);
  }

  /** GET …/resources/{name} for `p`. */
  async getAs(p: Principal, conversationId: string, name: string): Promise<Resource> {
    await this.rest.access.check(p, conversationId, 'read-resources', 'read resources');
    return this.get(conversationId, name);
  }

  /**
   * PUT …/resources/{name} for `p`, as `client`: a user's conversation is
   * created on first use (audited as `conversation.created`), then put().
   */
  async putAs(p: Principal, w: ClientWrite): Promise<{ resource: Resource; created: boolean }> {
    await openOnFirstUse(this.rest, p, {
      conversationId: w.conversationId,
      right: 'manage',
      what: 'write resources over REST',
      requestId: w.requestId,
    });
    const { conversationId, name, json, match, noneMatch, ttlSeconds } = w;
    return this.put({ conversationId, name, json, match, noneMatch, ttlSeconds, by: CLIENT, owner: p.subject });
  }

  /** DELETE …/resources/{name} for `p`. */
  async removeAs(p: Principal, conversationId: string, name: string, match?: Precondition): Promise<void> {
    await this.rest.access.check(p, conversationId, 'manage', 'delete resources over REST');
    return this.remove(conversationId, name, match);
  }

  /** The data's JSON text for storage; a ToolError when it is missing or over the size limit. */
  encode(data: unknown): string {
    if (data === undefined) throw new ToolError('invalid_args', 'data: Required');
    const text = JSON.stringify(data);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.maxBytes) throw new ResourceTooLargeError(bytes, this.maxBytes);
    return text;
  }

  /** One page, ordered by name (bytewise); empty for a conversation that does not exist. */
  list(conversationId: string, opts: ListResourcesOptions): Promise<Resource[]> {
    return this.store.list(conversationId, opts);
  }

  /** The same, but not_found when the conversation does not exist. */
  async listOrNotFound(conversationId: string, opts: ListResourcesOptions): Promise<Resource[]> {
    if (!(await this.conversations.exists(conversationId))) {
      throw conversationNotFound(conversationId);
    }
    return this.store.list(conversationId, opts);
  }

  find(conversationId: string, name: string): Promise<Resource | undefined> {
    return this.store.get(conversationId, name);
  }

  async get(conversationId: string, name: string): Promise<Resource> {
    const resource = await this.store.get(conversationId, name);
    if (!resource) throw new AppError('not_found', `Resource not found: ${name}`);
    return resource;
  }

  /**
   * A client's write of encoded data, with RFC 9110 §13.1's preconditions:
   * `match` (If-Match) passes when the resource exists (`*`) or is at one of
   * the listed versions; `noneMatch` (If-None-Match) passes when the resource
   * does not exist (`*`) or is at none of the listed versions (a missing
   * resource is at none). Both hold or nothing is written (412). Without
   * either: create or replace. The conversation is created on first use,
   * owned by `owner`.
   */
  async put(w: ResourceWrite): Promise<{ resource: Resource; created: boolean }> {
    const { conversationId, name, json, by, match, noneMatch, ttlSeconds } = w;
    await this.conversations.ensure(conversationId, w.owner);
    if (noneMatch && 'any' in noneMatch) {
      // `*`: only if nothing is there. With If-Match too, no state passes both (it needs the resource).
      const resource = match ? undefined : await this.store.create(conversationId, name, json, by, { ttlSeconds });
      if (resource) return { resource, created: true };
      const current = match ? await this.store.get(conversationId, name) : undefined;
      throw new AppError(
        'precondition_failed',
        match && !current ? `Resource not found: ${name}` : `Resource already exists: ${name}`,
      );
    }
    const notIn = noneMatch?.versions;
    if (!match) {
      const written = await this.store.upsert(conversationId, name, json, by, { notIn, ttlSeconds });
      if (written) return written;
    } else {
      const versions = { in: versionsOf(match), notIn };
      const updated = await this.store.update({ conversationId, name, json, by, versions, ttlSeconds });
      if (updated) return { resource: updated, created: false };
    }
    const current = await this.store.get(conversationId, name);
    throw new AppError(
      'precondition_failed',
      current ? `Resource ${name} is at version ${current.version}` : `Resource not found: ${name}`,
    );
  }

  /** Deletes, conditionally on the listed versions with `match`. */
  async remove(conversationId: string, name: string, match?: Precondition): Promise<void> {
    if (await this.store.delete(conversationId, name, versionsOf(match))) return;
    const exists = await this.store.get(conversationId, name);
    if (!exists) throw new AppError('not_found', `Resource not found: ${name}`);
    throw new AppError('precondition_failed', `Resource ${name} is at version ${exists.version}`);
  }
}
