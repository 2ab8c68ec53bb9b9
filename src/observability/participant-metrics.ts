/**
 * The participants' metrics (API.md, "Participants"): `participant_up` (1
 * while this replica reaches the participant's upstream, else 0) and
 * `participant_call_duration_seconds` by participant and outcome. Participant
 * names are an admin's, few and bounded; no other label is a caller's.
 */
import { Gauge, type Registry } from 'prom-client';
import { BucketHistogram } from './metrics-histogram';

/** Seconds: an upstream call takes milliseconds on a LAN, up to its timeout. */
const CALL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** `ok`, `error` (the upstream's error result), `timeout`, `unavailable` (unreachable or circuit open), `failed`. */
export type CallOutcome = 'ok' | 'error' | 'timeout' | 'unavailable' | 'failed';

export class ParticipantMetrics {
  private readonly up = new Map<string, boolean>();
  private readonly duration: BucketHistogram;
  private readonly series = new Map<string, { observe(v: number): void }>();

  constructor(registry: Registry) {
    const up = this.up;
    new Gauge({
      name: 'participant_up',
      help: "1 while this replica reaches the participant's upstream (its status is ready), else 0.",
      labelNames: ['participant'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [participant, isUp] of up) this.set({ participant }, isUp ? 1 : 0);
      },
    });
    this.duration = new BucketHistogram(
      'participant_call_duration_seconds',
      'Upstream calls of participants, by participant and outcome (ok, error, timeout, unavailable, failed).',
      ['participant', 'outcome'],
      CALL_BUCKETS,
      registry,
    );
  }

  setUp(participant: string, isUp: boolean): void {
    this.up.set(participant, isUp);
  }

  /** A participant deleted: its gauge goes; its call histogram keeps what it counted. */
  forget(participant: string): void {
    this.up.delete(participant);
  }

  observeCall(participant: string, outcome: CallOutcome, seconds: number): void {
    const key = `${participant}\u0000${outcome}`;
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = this.duration.labels(participant, outcome)));
    s.observe(seconds);
  }
}
