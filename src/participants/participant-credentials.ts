/**
 * Per-owner credentials (API.md, "Participants"): the headers a conversation
 * owner stored for a participant, used instead of the participant's for
 * calls in that owner's conversations (mcp-http and openapi). Read through a
 * short cache, so a remote call costs no database round trip in steady
 * state; a change on this replica drops its entry at once, one on another
 * replica is seen within TTL_MS.
 */
import type { ParticipantStore } from './participant-records';
import type { SecretBox } from './secrets';

/** Below the 2 s in which a change reaches every replica (API.md). */
const TTL_MS = 1000;
/** Entries kept at most; the oldest go first. */
const MAX_ENTRIES = 10_000;

interface Entry {
  at: number;
  headers: Promise<Record<string, string> | undefined>;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: ParticipantStore,
    private readonly box: () => SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  get(participant: string, owner: string): Promise<Record<string, string> | undefined> {
    const key = `${participant}\u0000${owner}`;
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < TTL_MS) return hit.headers;
    const headers = this.store
      .credentials(participant, owner)
      .then((sealed) => (sealed === undefined ? undefined : this.box().open<Record<string, string>>(sealed)));
    this.entries.delete(key);
    this.entries.set(key, { at: this.now(), headers });
    headers.catch(() => this.entries.delete(key));
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return headers;
  }

  forget(participant: string, owner: string): void {
    this.entries.delete(`${participant}\u0000${owner}`);
  }
}
