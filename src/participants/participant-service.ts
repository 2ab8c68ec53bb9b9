/**
 * Participants over REST (API.md, "Participants (remote tools)"): who may do
 * what, validation, the store, audit, and handing each change to the live
 * side (participant-live.ts) that runs participants on this replica and
 * publishes their tools. Admins register, change, delete, refresh and
 * approve; users (and admins) read them and keep their own credentials;
 * agents do none of it. No secret value leaves this file except sealed into
 * the store or handed to a connector.
 */
import { SYSTEM_CHAIN, type AuditService } from '../core/audit';
import { AppError } from '../core/errors';
import { type Principal, forbidden } from '../core/principal';
import type { ToolRegistry } from '../core/tool-registry';
import type { AuditEvent } from '../core/ports';
import type { CredentialCache } from './participant-credentials';
import type { ParticipantLive } from './participant-live';
import { approve } from './participant-pinning';
import { keeps } from './participant-tools';
import type { NewParticipant, ParticipantRecord, ParticipantSecrets, ParticipantStore } from './participant-records';
import {
  applyPatch,
  validateCredentials,
  validateParticipant,
  validatePatch,
  type TParticipantBody,
  type UrlCheck,
} from './participant-validation';
import {
  actionDefinitionView,
  bodyOf,
  participantView,
  secretNames,
  type ActionDefinitionView,
  type ParticipantView,
} from './participant-views';
import type { SecretBox } from './secrets';

export interface ParticipantServiceDeps {
  store: ParticipantStore;
  registry: ToolRegistry;
  audit: AuditService;
  live: ParticipantLive;
  box: () => SecretBox;
  checkUrl: UrlCheck;
  credentials: CredentialCache;
}

function notFound(name: string): AppError {
  return new AppError('not_found', `No participant named ${name}`);
}

function requireAdmin(p: Principal, what: string): void {
  if (p.role !== 'admin') throw forbidden(p, `${what} (only admins may)`);
}

function requireUserOrAdmin(p: Principal, what: string): void {
  if (p.role === 'agent') throw forbidden(p, what);
}

/** The stored form of a checked body (secrets sealed). */
function recordOf(body: TParticipantBody, box: SecretBox): Omit<NewParticipant, 'name' | 'transport' | 'refreshedAt'> {
  const secrets: ParticipantSecrets = { headers: body.headers ?? {}, env: body.env ?? {} };
  const names = secretNames(secrets);
  return {
    description: body.description ?? '',
    config: {
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.command !== undefined ? { command: body.command, args: body.args ?? [] } : {}),
      ...(body.cwd !== undefined ? { cwd: body.cwd } : {}),
      ...(body.spec !== undefined ? { spec: body.spec } : {}),
      ...(body.specUrl !== undefined ? { specUrl: body.specUrl } : {}),
      ...(body.baseUrl !== undefined ? { baseUrl: body.baseUrl } : {}),
    },
    sealedSecrets: names.length > 0 ? box.seal(secrets) : null,
    secretNames: names,
    levels: body.levels ?? {},
    include: body.include ?? null,
    exclude: body.exclude ?? null,
    timeoutMs: body.timeoutMs ?? null,
    enabled: body.enabled ?? true,
    status: body.enabled === false ? 'disabled' : 'connecting',
    lastError: null,
    protocolVersion: null,
    serverInfo: null,
  };
}

export class ParticipantService {
  constructor(private readonly deps: ParticipantServiceDeps) {}

  async list(p: Principal): Promise<ParticipantView[]> {
    requireUserOrAdmin(p, 'list participants');
    const records = await this.deps.store.list();
    return Promise.all(records.map((r) => this.view(r)));
  }

  async get(p: Principal, name: string): Promise<ParticipantView> {
    requireUserOrAdmin(p, 'read participants');
    return this.view(await this.record(name));
  }

  async register(p: Principal, body: unknown, requestId: string): Promise<ParticipantView> {
    requireAdmin(p, 'register participants');
    const checked = validateParticipant(body, this.deps.checkUrl);
    if (this.deps.registry.hasLocalTool(checked.name)) {
      throw new AppError('conflict', `A tool named ${checked.name} already exists`);
    }
    const box = this.deps.box();
    await this.deps.store.insert(
      { name: checked.name, transport: checked.transport, ...recordOf(checked, box), refreshedAt: null },
      [],
    );
    await this.changed(p, 'participant.registered', checked.name, requestId);
    await this.deps.live.install(checked.name);
    // The first listing pins every definition: done now, so the answer shows the actions. An upstream
    // that cannot be reached leaves the participant `failing`; its first listing later pins them.
    await this.deps.live.refresh(checked.name);
    return this.view(await this.record(checked.name));
  }

  async update(p: Principal, name: string, body: unknown, requestId: string): Promise<ParticipantView> {
    requireAdmin(p, 'change participants');
    const patch = validatePatch(body);
    const current = await this.record(name);
    if (patch.transport !== undefined && patch.transport !== current.transport) {
      throw new AppError(
        'validation_failed',
        'transport: cannot be changed; delete the participant and register it again',
        [{ path: 'transport', message: 'cannot be changed' }],
      );
    }
    const merged = applyPatch(bodyOf(current, this.deps.live.secretsOf(current)), patch);
    const checked = validateParticipant(merged, this.deps.checkUrl);
    const {
      status: _status,
      lastError: _e,
      protocolVersion: _v,
      serverInfo: _s,
      ...changes
    } = recordOf(checked, this.deps.box());
    const updated = await this.deps.store.update(name, changes);
    if (!updated) throw notFound(name);
    await this.changed(p, 'participant.changed', name, requestId);
    await this.deps.live.install(name);
    if (updated.enabled) this.deps.live.refreshSoon(name, 0);
    return this.view(updated);
  }

  async remove(p: Principal, name: string, requestId: string): Promise<void> {
    requireAdmin(p, 'delete participants');
    if (!(await this.deps.store.delete(name))) throw notFound(name);
    await this.changed(p, 'participant.deleted', name, requestId);
    await this.deps.live.install(name);
  }

  async refresh(p: Principal, name: string): Promise<ParticipantView> {
    requireAdmin(p, 'refresh participants');
    await this.record(name);
    await this.deps.live.refresh(name);
    return this.view(await this.record(name));
  }

  async action(p: Principal, name: string, action: string): Promise<ActionDefinitionView> {
    requireAdmin(p, "read participants' action definitions");
    const record = await this.record(name);
    const found = (await this.deps.store.actions(name)).find((a) => a.action === action && keeps(record, a));
    if (!found) throw new AppError('not_found', `Participant ${name} has no action ${action}`);
    return actionDefinitionView(record, found);
  }

  async approve(p: Principal, name: string, action: string, requestId: string): Promise<ActionDefinitionView> {
    requireAdmin(p, 'approve definitions');
    const record = await this.record(name);
    let missing = true;
    await this.deps.store.updateActions(name, (current) => {
      missing = !current.some((a) => a.action === action && keeps(record, a));
      if (missing) return { actions: current, changed: false, result: undefined };
      const actions = current.map((a) => (a.action === action ? (approve(a) ?? a) : a));
      const changed = actions.some((a, i) => a !== current[i]);
      return { actions, changed, result: undefined };
    });
    if (missing) throw new AppError('not_found', `Participant ${name} has no action ${action}`);
    await this.changed(p, 'participant.action_approved', name, requestId, action);
    await this.deps.live.install(name);
    return this.action(p, name, action);
  }

  async setCredentials(p: Principal, name: string, body: unknown, requestId: string): Promise<void> {
    requireUserOrAdmin(p, 'keep participant credentials');
    const headers = validateCredentials(body);
    if (!(await this.deps.store.setCredentials(name, p.subject, this.deps.box().seal(headers)))) throw notFound(name);
    this.deps.credentials.forget(name, p.subject);
    await this.changed(p, 'participant.credentials_set', name, requestId);
  }

  async deleteCredentials(p: Principal, name: string, requestId: string): Promise<void> {
    requireUserOrAdmin(p, 'keep participant credentials');
    await this.record(name);
    if (await this.deps.store.deleteCredentials(name, p.subject)) {
      this.deps.credentials.forget(name, p.subject);
      await this.changed(p, 'participant.credentials_removed', name, requestId);
    }
  }

  private async record(name: string): Promise<ParticipantRecord> {
    const record = await this.deps.store.get(name);
    if (!record) throw notFound(name);
    return record;
  }

  private async view(record: ParticipantRecord): Promise<ParticipantView> {
    const live = this.deps.live.get(record.name);
    const actions = live?.record.version === record.version ? live.actions : await this.deps.store.actions(record.name);
    const runtime = live?.runtime;
    return participantView(
      record,
      actions,
      runtime ? { status: runtime.status, lastError: runtime.lastError, info: runtime.info() } : undefined,
    );
  }

  private changed(p: Principal, event: AuditEvent, name: string, requestId: string, action?: string): Promise<void> {
    return this.deps.audit.changed(p, event, SYSTEM_CHAIN, requestId, {
      tool: name,
      ...(action !== undefined ? { action } : {}),
    });
  }
}
