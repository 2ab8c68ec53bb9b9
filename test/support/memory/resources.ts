/** The ResourceStore port in memory (src/db/resource-store.ts): each method one statement. */
import { conversationNotFound } from '../../../src/core/errors';
import type {
  ExpiredResource,
  ListResourcesOptions,
  ResourceListQuery,
  ResourceStore,
  ResourceUpdate,
  ResourceWriteOptions,
  Transaction,
  VersionCondition,
} from '../../../src/core/ports';
import type { Resource } from '../../../src/core/tool-interface';
import { type MemoryDb, key } from './db';

export class MemoryResourceStore implements ResourceStore {
  constructor(private readonly db: MemoryDb) {}

  /** The row unless it expired (as the SQL store's LIVE). */
  private live(conversationId: string, name: string): Resource | undefined {
    const r = this.db.resources.get(key(conversationId, name));
    return r && (r.expiresAt === undefined || r.expiresAt > this.db.now()) ? r : undefined;
  }

  /** A write's expiry: its own, or none. */
  private expiry(ttlSeconds: number | undefined): { expiresAt?: number } {
    return ttlSeconds === undefined ? {} : { expiresAt: this.db.now() + ttlSeconds * 1000 };
  }

  get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined> {
    return Promise.resolve(this.db.statement(tx, () => this.live(conversationId, name)));
  }

  getForUpdate(conversationId: string, name: string, tx: Transaction): Promise<Resource | undefined> {
    return this.get(conversationId, name, tx);
  }

  lockAll(conversationId: string, names: string[], tx: Transaction): Promise<Resource[]> {
    return Promise.resolve(
      this.db.statement(tx, () => [...names].sort().flatMap((name) => this.live(conversationId, name) ?? [])),
    );
  }

  create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts: ResourceWriteOptions = {},
  ): Promise<Resource | undefined> {
    const { tx } = opts;
    return Promise.resolve(
      this.db.statement(tx, () => {
        if (!this.db.conversations.has(conversationId)) throw conversationNotFound(conversationId);
        if (this.live(conversationId, name)) return undefined;
        const now = this.db.now();
        const r: Resource = {
          name,
          data: JSON.parse(json),
          createdBy: by,
          updatedBy: by,
          createdAt: now,
          updatedAt: now,
          version: 1,
          ...this.expiry(opts.ttlSeconds),
        };
        this.db.put(this.db.resources, key(conversationId, name), r, tx);
        return r;
      }),
    );
  }

  update(w: ResourceUpdate, tx?: Transaction): Promise<Resource | undefined> {
    const { conversationId, name, json, by, versions } = w;
    return Promise.resolve(
      this.db.statement(tx, () => {
        const r = this.live(conversationId, name);
        if (!r || !allowed(r.version, versions)) return undefined;
        const { expiresAt: _old, ...kept } = r;
        const changed = { data: JSON.parse(json), updatedBy: by, updatedAt: this.db.now(), version: r.version + 1 };
        const next = { ...kept, ...changed, ...this.expiry(w.ttlSeconds) };
        this.db.put(this.db.resources, key(conversationId, name), next, tx);
        return next;
      }),
    );
  }

  async upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    opts: ResourceWriteOptions & { notIn?: number[] | undefined } = {},
  ): Promise<{ resource: Resource; created: boolean } | undefined> {
    const { notIn, tx } = opts;
    // One statement in `tx` (a single-statement unit counts it once): create, else update.
    return Promise.resolve(
      this.db.statement(tx, () => {
        if (!this.db.conversations.has(conversationId)) throw conversationNotFound(conversationId);
        const r = this.live(conversationId, name);
        if (r && !allowed(r.version, notIn ? { notIn } : undefined)) return undefined;
        const now = this.db.now();
        const fresh = { name, createdBy: by, createdAt: now, version: 1 };
        const base = r ? { name, createdBy: r.createdBy, createdAt: r.createdAt, version: r.version + 1 } : fresh;
        const next: Resource = { ...base, data: JSON.parse(json), updatedBy: by, updatedAt: now };
        Object.assign(next, this.expiry(opts.ttlSeconds));
        this.db.put(this.db.resources, key(conversationId, name), next, tx);
        return { resource: next, created: !r };
      }),
    );
  }

  delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        const r = this.live(conversationId, name);
        if (!r || !allowed(r.version, expectedVersions ? { in: expectedVersions } : undefined)) return false;
        this.db.put(this.db.resources, key(conversationId, name), undefined, tx);
        return true;
      }),
    );
  }

  list(conversationId: string, opts: ListResourcesOptions, tx?: Transaction): Promise<Resource[]> {
    return Promise.resolve(
      this.db.statement(tx, () =>
        [...this.db.resources.entries()]
          .filter(([k]) => k.startsWith(conversationId + '\u0000'))
          .map(([, r]) => r)
          .filter((r) => opts.prefix === undefined || r.name.startsWith(opts.prefix))
          .filter((r) => opts.createdBy === undefined || r.createdBy === opts.createdBy)
          .filter((r) => opts.after === undefined || Buffer.compare(Buffer.from(r.name), Buffer.from(opts.after)) > 0)
          .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
          .slice(0, opts.limit ?? 100),
      ),
    );
  }

  sweepExpired(limit: number, tx: Transaction): Promise<ExpiredResource[]> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        const now = this.db.now();
        const due = [...this.db.resources.entries()]
          .filter(([, r]) => r.expiresAt !== undefined && r.expiresAt <= now)
          .slice(0, limit);
        for (const [k] of due) this.db.put(this.db.resources, k, undefined, tx);
        return due.map(([k, r]) => ({ conversationId: k.split('\u0000')[0]!, name: r.name, version: r.version }));
      }),
    );
  }

  /** The name sort and the plain filters; SQL/JSON path filters need the database (src/db/resource-query.ts). */
  query(conversationId: string, q: ResourceListQuery, tx?: Transaction): Promise<Resource[]> {
    if (q.filter !== undefined || q.sort.key !== 'name' || q.sort.descending || q.updatedBy || q.updatedSince) {
      return Promise.reject(new Error('MemoryResourceStore.query: only the ascending name sort without a filter'));
    }
    const { prefix, createdBy, limit } = q;
    const after = q.after?.name;
    return this.list(conversationId, { prefix, createdBy, after, limit }, tx);
  }
}

function allowed(version: number, v: VersionCondition | undefined): boolean {
  if (!v) return true;
  if (v.in && !v.in.includes(version)) return false;
  return !(v.notIn && v.notIn.includes(version));
}
