/**
 * The participants of one app, wired: the store, the secrets key, the live
 * side and the REST service. start() checks the secrets key against the
 * fingerprint the database keeps (a replica with another key refuses to
 * start, naming SECRETS_KEY), loads every participant from the store
 * (their tools are published at once; their upstreams are reached in the
 * background, so one that is down delays nothing) and starts the periodic
 * refresh; close() stops them all (stdio children included).
 */
import type { AuditService } from '../core/audit';
import type { ToolRegistry } from '../core/tool-registry';
import type { ToolLogger } from '../core/tool-interface';
import type { ParticipantMetrics } from '../observability/participant-metrics';
import { type AddressRules, addressRules } from './participant-addresses';
import { CredentialCache } from './participant-credentials';
import { ParticipantLive } from './participant-live';
import type { ParticipantStore } from './participant-records';
import { ParticipantService } from './participant-service';
import { SecretBox, checkFingerprint, loadSecretsKey } from './secrets';

export interface ParticipantsOptions {
  store: ParticipantStore;
  registry: ToolRegistry;
  audit: AuditService;
  logger: ToolLogger;
  metrics: ParticipantMetrics | undefined;
  config: {
    secretsKey: string | undefined;
    dataDir: string;
    toolTimeoutMs: number;
    participantRefreshSeconds: number;
    participantAllowedHosts: string[];
  };
}

export class Participants {
  readonly service: ParticipantService;
  private readonly live: ParticipantLive;
  private readonly rules: AddressRules;
  private box: SecretBox | undefined;
  private started: Promise<void> | undefined;

  constructor(private readonly opts: ParticipantsOptions) {
    const box = (): SecretBox => {
      if (!this.box) throw new Error('Participants are not started yet (the secrets key is not loaded)');
      return this.box;
    };
    const rules = (this.rules = addressRules(opts.config.participantAllowedHosts));
    const credentials = new CredentialCache(opts.store, box);
    this.live = new ParticipantLive({
      store: opts.store,
      registry: opts.registry,
      audit: opts.audit,
      box,
      fetch: rules.fetch,
      logger: opts.logger,
      metrics: opts.metrics,
      toolTimeoutMs: opts.config.toolTimeoutMs,
      credentials: (participant, owner) => credentials.get(participant, owner),
    });
    this.service = new ParticipantService({
      store: opts.store,
      registry: opts.registry,
      audit: opts.audit,
      live: this.live,
      box,
      checkUrl: rules.check,
      credentials,
    });
  }

  /** Once; again returns the same start, or tries again after a failed one. Needs the migrated database. */
  start(): Promise<void> {
    this.started ??= this.begin().catch((err: unknown) => {
      this.started = undefined;
      throw err;
    });
    return this.started;
  }

  async close(): Promise<void> {
    await this.started?.catch(() => undefined);
    await this.live.close();
    await this.rules.fetch.close().catch(() => undefined);
  }

  private async begin(): Promise<void> {
    const { config } = this.opts;
    const { key, source } = await loadSecretsKey({
      ...(config.secretsKey !== undefined ? { secretsKey: config.secretsKey } : {}),
      dataDir: config.dataDir,
    });
    const box = SecretBox.fromKey(key);
    checkFingerprint(await this.opts.store.fingerprint(box.fingerprint), box);
    if (source === 'generated')
      this.opts.logger.info('No SECRETS_KEY: generated one into DATA_DIR/secrets.key (mode 0600)');
    this.box = box;
    this.opts.registry.attachRemoteSource(this.live);
    await this.live.load();
    this.live.startTimer(config.participantRefreshSeconds);
  }
}
