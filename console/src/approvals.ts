/** The inbox's data: pending approvals, kept current from the event stream, and agent keys' labels. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { type ApiKey, type Approval, api, message } from './api';
import { openEventStream } from './events';

export type StreamState = 'connecting' | 'live' | 'down';

export interface LiveApprovals {
  pending: Approval[];
  decided: Approval[];
  stream: StreamState;
  error: string | null;
  reload: () => void;
  /** An approval as the API just answered it (a decision taken here), applied before its event arrives. */
  apply: (approval: Approval) => void;
}

const newestFirst = (a: Approval, b: Approval) => b.createdAt - a.createdAt;

/** Pending approvals of every conversation the person sees, live from GET /events. */
export function useLiveApprovals(): LiveApprovals {
  const [pending, setPending] = useState<Approval[]>([]);
  const [decided, setDecided] = useState<Approval[]>([]);
  const [stream, setStream] = useState<StreamState>('connecting');
  const [error, setError] = useState<string | null>(null);

  const reload = useCallback(() => {
    api<{ approvals: Approval[] }>('/approvals?status=pending&limit=500')
      .then((page) => {
        setPending(page.approvals);
        setError(null);
      })
      .catch((err: unknown) => setError(message(err)));
  }, []);

  const apply = useCallback((approval: Approval) => {
    setPending((list) => {
      const rest = list.filter((a) => a.id !== approval.id);
      return approval.status === 'pending' ? [approval, ...rest].sort(newestFirst) : rest;
    });
    if (approval.status !== 'pending') {
      setDecided((list) => [approval, ...list.filter((a) => a.id !== approval.id)]);
    }
  }, []);

  useEffect(() => {
    return openEventStream('/events', {
      // (Re)opened: events missed while down are replayed by Last-Event-ID, but the first open needs the state.
      onOpen: () => {
        setStream('live');
        reload();
      },
      onComment: (text) => {
        if (/gone|older/i.test(text)) reload();
      },
      onDown: (reason, retrying) => {
        setStream('down');
        if (!retrying) setError(`Live updates stopped: ${reason}`);
      },
      onEvent: ({ type, data }) => {
        if (!type.startsWith('approval.')) return;
        const approval = (data as { subject?: Approval }).subject;
        if (approval?.id) apply(approval);
      },
    });
  }, [reload, apply]);

  return { pending, decided, stream, error, reload, apply };
}

/** Agent keys' labels by key id (GET /keys: an admin's are all keys, a user's its conversations' agent keys). */
export function useKeyLabels(wanted: string[]): Map<string, ApiKey> {
  const [keys, setKeys] = useState<Map<string, ApiKey>>(new Map());
  const asked = useRef(new Set<string>());
  const missing = wanted.filter((id) => !keys.has(id) && !asked.current.has(id));
  const need = missing.join(',');
  useEffect(() => {
    if (need === '') return;
    for (const id of need.split(',')) asked.current.add(id);
    api<{ keys: ApiKey[] }>('/keys')
      .then((list) => setKeys(new Map(list.keys.map((k) => [k.id, k]))))
      .catch(() => undefined); // labels are a nicety: the key id is shown without them
  }, [need]);
  return keys;
}

/** `agent:KEY_ID` → the key's id, or undefined for people. */
export function agentKeyId(requestedBy: string): string | undefined {
  return requestedBy.startsWith('agent:') ? requestedBy.slice('agent:'.length) : undefined;
}

/** The current time, ticking every second while mounted (for "time left"). */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, []);
  return now;
}

export function timeLeft(expiresAt: number | null, now: number): string {
  if (expiresAt === null) return 'no limit';
  const s = Math.round((expiresAt - now) / 1000);
  if (s <= 0) return 'lapsed';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
