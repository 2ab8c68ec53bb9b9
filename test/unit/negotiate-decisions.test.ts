/**
 * negotiate's decision order (docs/ARCHITECTURE.md: route → access → policy →
 * agent ceiling → args → approval retry → level → run → audit), pinned on the
 * real ConversationManager, ApprovalService, PermissionService and
 * AuditService over in-memory stores (test/support/memory-stores.ts) and the
 * bundled tools: no database, no HTTP. Each test sets up a call that two
 * adjacent checks would both refuse, and asserts which one answers.
 */
import { AppError } from '../../src/core/errors';
import type { NegotiateRequest, NegotiationResult } from '../../src/core/negotiation';
import type { Principal } from '../../src/core/principal';
import { ToolRegistry } from '../../src/core/tool-registry';
import { type MemoryCore, memoryCore, silentLogger } from '../support/memory-stores';
import { FakeUpstream, installTools, quarantinedTool, remoteTool } from '../support/remote-tool';

const alice: Principal = { role: 'user', subject: 'alice' };
const bob: Principal = { role: 'user', subject: 'bob' };
const admin: Principal = { role: 'admin', subject: 'root' };
/** Alice's agent key in conversation `c1`. */
const agent = (maxLevel?: 1 | 2 | 3): Principal => ({
  role: 'agent',
  subject: 'alice',
  keyId: 'k1',
  conversationId: 'c1',
  ...(maxLevel ? { maxLevel } : {}),
});

const CREATE = { action: 'data-tool/create-resource', args: { name: 'notes', data: { n: 1 } } };
const BAD_ARGS = { action: 'data-tool/create-resource', args: { name: 'bad name!' } };

/** The bundled tools, loaded once; every test gets fresh stores and services over them. */
const registry = new ToolRegistry({ hotReload: false, logger: silentLogger });
// Each test's catalog listens to it.
registry.setMaxListeners(0);
let core: MemoryCore;

beforeEach(async () => {
  core = await memoryCore({ registry });
});

afterAll(() => registry.close());

function negotiate(p: Principal, req: NegotiateRequest, conversationId = 'c1'): Promise<NegotiationResult> {
  return core.manager.negotiate(p, conversationId, req, { meta: { requestId: 'req-1' } });
}

/** Alice's conversation c1, with a policy. */
async function aliceOwns(deny: string[] = []): Promise<void> {
  await negotiate(alice, { action: 'list-tools' });
  const row = core.db.conversations.get('c1')!;
  core.db.conversations.set('c1', { ...row, policy: { deny } });
}

async function notFound(call: Promise<unknown>): Promise<void> {
  await expect(call).rejects.toBeInstanceOf(AppError);
  await expect(call).rejects.toMatchObject({ code: 'not_found' });
}

function approvals(): string[] {
  return [...core.db.approvals.values()].map((a) => `${a.requestedBy} ${a.action} ${a.status}`);
}

describe('negotiate decides in order', () => {
  it('routes first: an unknown action is no_tool, even in a stranger’s conversation, and creates nothing', async () => {
    await aliceOwns();
    expect(await negotiate(bob, { action: 'frobnicate-widgets' })).toMatchObject({ code: 'no_tool' });
    expect(await negotiate(alice, { action: 'create-resource', tool: 'no-such-tool' })).toMatchObject({
      code: 'unknown_tool',
    });
    expect(await negotiate(bob, { action: 'frobnicate-widgets' }, 'fresh')).toMatchObject({ code: 'no_tool' });
    expect(core.db.conversations.has('fresh')).toBe(false);
  });

  it('decides access before the policy: a stranger gets not_found where the owner gets denied', async () => {
    await aliceOwns(['data-tool/*']);
    await notFound(negotiate(bob, CREATE));
    await notFound(negotiate({ ...agent(), conversationId: 'c2' }, CREATE));
    expect(await negotiate(alice, CREATE)).toMatchObject({ code: 'denied', alignment: 'contradiction' });
    // Nothing was decided in a conversation the caller may not see: no entry of its own.
    await core.auditStore.flush();
    expect(core.db.pendingAudit.map((e) => `${e.actor} ${e.outcome}`)).toEqual([
      'user:alice success', // conversation.created
      'user:alice success', // list-tools
      'user:alice denied',
    ]);
  });

  it('applies the policy before the agent key’s ceiling', async () => {
    await aliceOwns(['data-tool/create-resource']);
    expect(await negotiate(agent(1), CREATE)).toMatchObject({ code: 'denied' });
    core.db.conversations.set('c1', { ...core.db.conversations.get('c1')!, policy: { deny: [] } });
    expect(await negotiate(agent(1), CREATE)).toMatchObject({ code: 'level_ceiling', alignment: 'agnostic' });
  });

  it('applies the policy before the args', async () => {
    await aliceOwns(['*/create-*']);
    expect(await negotiate(alice, BAD_ARGS)).toMatchObject({ code: 'denied' });
  });

  it('applies the ceiling before the args, and no approval helps', async () => {
    await aliceOwns();
    expect(await negotiate(agent(1), BAD_ARGS)).toMatchObject({ code: 'level_ceiling' });
    expect(await negotiate(agent(1), { ...CREATE, approvalId: 'apr_whatever' })).toMatchObject({
      code: 'level_ceiling',
    });
    expect(approvals()).toEqual([]);
  });

  it('checks the args before the approval retry and the level: invalid_args, no request recorded', async () => {
    await aliceOwns();
    expect(await negotiate(alice, BAD_ARGS)).toMatchObject({ code: 'invalid_args' });
    expect(await negotiate(alice, { ...BAD_ARGS, approvalId: 'apr_nope' })).toMatchObject({ code: 'invalid_args' });
    expect(approvals()).toEqual([]);
    expect(core.units.started).toBe(0);
  });

  it('checks the approval retry before the level: an unknown approval is approval_not_found', async () => {
    await aliceOwns();
    expect(await negotiate(alice, { ...CREATE, approvalId: 'apr_nope' })).toMatchObject({
      code: 'approval_not_found',
    });
    expect(approvals()).toEqual([]);
  });

  it('refuses a level too low with permission_required and one request per principal', async () => {
    await aliceOwns();
    const first = await negotiate(alice, CREATE);
    expect(first).toMatchObject({ code: 'permission_required', requiresApproval: true });
    const again = await negotiate(alice, CREATE);
    expect(again.approval!.id).toBe(first.approval!.id);
    const agents = await negotiate(agent(), CREATE);
    expect(agents.approval!.id).not.toBe(first.approval!.id);
    expect(approvals().sort()).toEqual(['agent:k1 create-resource pending', 'user:alice create-resource pending']);
    // Other args are another call: another request.
    await negotiate(alice, { ...CREATE, args: { name: 'other', data: 1 } });
    expect(approvals()).toHaveLength(3);
    expect(core.db.resources.size).toBe(0);
  });
});

describe('a retry under an approval', () => {
  async function refused(p: Principal = alice): Promise<string> {
    await aliceOwns();
    const r = await negotiate(p, CREATE);
    expect(r.code).toBe('permission_required');
    return r.approval!.id;
  }

  it('is still refused while the request is pending', async () => {
    const id = await refused();
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({
      code: 'permission_required',
      approval: { id, status: 'pending' },
    });
  });

  it('covers exactly the call and the caller that asked: other args or another caller are a mismatch', async () => {
    const id = await refused();
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    const otherArgs = { ...CREATE, args: { name: 'notes', data: { n: 2 } }, approvalId: id };
    expect(await negotiate(alice, otherArgs)).toMatchObject({ code: 'approval_mismatch' });
    expect(await negotiate(agent(), { ...CREATE, approvalId: id })).toMatchObject({
      code: 'approval_mismatch',
      error: expect.stringMatching(/another caller/),
    });
    expect(core.db.approvals.get(id)!.status).toBe('approved');
    expect(core.db.resources.size).toBe(0);
  });

  it('runs once under a `once` approval, then is approval_used', async () => {
    const id = await refused();
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({ success: true });
    expect(core.db.approvals.get(id)!.status).toBe('used');
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({ code: 'approval_used' });
    expect(core.db.resources.get('c1\u0000notes')).toMatchObject({ version: 1, createdBy: 'data-tool' });
  });

  it('gives the `once` approval back when the action fails (the claim rolls back with it)', async () => {
    await aliceOwns();
    await core.manager.negotiate(admin, 'c1', { action: 'upgrade:data-tool:level-2' });
    expect(await negotiate(alice, CREATE)).toMatchObject({ success: true });
    await core.manager.negotiate(admin, 'c1', { action: 'upgrade:data-tool:level-1' });
    const id = (await negotiate(alice, CREATE)).approval!.id;
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    // The resource exists: the action fails with resource_exists, and its claim is undone.
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({ code: 'resource_exists' });
    expect(core.db.approvals.get(id)!.status).toBe('approved');
  });

  it('is approval_rejected after a rejection, approval_expired once lapsed', async () => {
    const id = await refused();
    await core.approvals.reject(alice, 'c1', id, 'not today', 'req-2');
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({
      code: 'approval_rejected',
      error: expect.stringMatching(/not today/),
    });
    const other = { ...CREATE, args: { name: 'later', data: 1 } };
    const id2 = (await negotiate(alice, other)).approval!.id;
    await core.approvals.approve(alice, 'c1', id2, { scope: 'once', expiresInSeconds: 60 }, 'req-3');
    core.db.advance(61_000);
    expect(await negotiate(alice, { ...other, approvalId: id2 })).toMatchObject({ code: 'approval_expired' });
    expect(core.db.resources.size).toBe(0);
  });

  it('is decided by the level under an approval for the conversation', async () => {
    const id = await refused();
    await core.approvals.approve(alice, 'c1', id, { scope: 'conversation' }, 'req-2');
    expect(await negotiate(alice, { ...CREATE, approvalId: id })).toMatchObject({ success: true });
    // The level stays: the next call needs no approval.
    expect(await negotiate(alice, { ...CREATE, args: { name: 'more', data: 2 } })).toMatchObject({ success: true });
  });
});

describe('what a decision leaves behind', () => {
  it('a dry run records and executes nothing, and creates no conversation', async () => {
    expect(await negotiate(alice, { ...CREATE, dryRun: true }, 'dry')).toMatchObject({
      code: 'permission_required',
    });
    expect(core.db.conversations.has('dry')).toBe(false);
    await aliceOwns();
    expect(await negotiate(alice, { ...CREATE, dryRun: true })).toMatchObject({ code: 'permission_required' });
    expect(approvals()).toEqual([]);
    await core.manager.negotiate(alice, 'c1', { action: 'upgrade:data-tool:level-2' });
    expect(await negotiate(alice, { ...CREATE, dryRun: true })).toMatchObject({ success: true });
    expect(core.db.resources.size).toBe(0);
    expect(core.units.started).toBe(1); // the upgrade's
  });

  it('a success writes its audit entry with the action’s writes; a refusal is queued; the chain verifies', async () => {
    await aliceOwns();
    await negotiate(alice, CREATE); // refused: permission_required
    await core.permissions.setByHand(alice, 'c1', 'data-tool', 2, 'req-set');
    // The success entry is pending as soon as the write committed (ahead of it, in the same statement).
    const before = core.db.pendingAudit.length;
    expect(await negotiate(alice, CREATE)).toMatchObject({ success: true });
    expect(core.db.pendingAudit.slice(before)).toEqual([
      expect.objectContaining({ event: 'negotiate', outcome: 'success', tool: 'data-tool', status: 200 }),
    ]);
    const page = await core.audit.list(alice, 'c1', 0, 100);
    expect(page.entries.map((e) => `${e.event} ${e.outcome} ${e.action ?? ''}`)).toEqual([
      'conversation.created success ',
      'negotiate success list-tools',
      'negotiate permission_required create-resource',
      'approval.requested pending create-resource',
      'permission.changed success level-1-to-2',
      'negotiate success create-resource',
    ]);
    expect(await core.audit.verify(alice, 'c1')).toMatchObject({ ok: true, entries: 6 });
  });

  it('a failed write leaves neither its writes nor its success entry', async () => {
    await aliceOwns();
    await core.permissions.setByHand(alice, 'c1', 'data-tool', 2, 'req-set');
    await negotiate(alice, CREATE);
    expect(await negotiate(alice, CREATE)).toMatchObject({ code: 'resource_exists' });
    await core.auditStore.flush();
    expect(core.db.pendingAudit.filter((e) => e.event === 'negotiate').map((e) => e.outcome)).toEqual([
      'success', // list-tools
      'success',
      'resource_exists',
    ]);
  });

  it('a level set through the permission service settles the requests it makes unnecessary', async () => {
    await aliceOwns();
    const mine = (await negotiate(alice, CREATE)).approval!.id;
    const agents = (await negotiate(agent(), CREATE)).approval!.id;
    const change = await core.permissions.setByHand(alice, 'c1', 'data-tool', 2, 'req-set');
    expect(change).toEqual({ tool: 'data-tool', level: 2, previousLevel: 1 });
    expect(core.db.approvals.get(mine)).toMatchObject({ status: 'satisfied', decidedBy: 'user:alice' });
    expect(core.db.approvals.get(agents)).toMatchObject({ status: 'satisfied' });
    expect(core.db.history).toEqual([
      expect.objectContaining({ conversationId: 'c1', tool: 'data-tool', fromLevel: 1, toLevel: 2 }),
    ]);
    expect(await negotiate(alice, CREATE)).toMatchObject({ success: true });
  });

  it('a call that runs settles its caller’s own pending request for it', async () => {
    await aliceOwns();
    const id = (await negotiate(agent(), CREATE)).approval!.id;
    // Made to ask for more than the level set next, so that the level change leaves it pending.
    core.db.approvals.set(id, { ...core.db.approvals.get(id)!, requiredLevel: 3 });
    await core.permissions.setByHand(alice, 'c1', 'data-tool', 2, 'req-set');
    expect(core.db.approvals.get(id)!.status).toBe('pending');
    expect(await negotiate(agent(), CREATE)).toMatchObject({ success: true });
    expect(core.db.approvals.get(id)).toMatchObject({ status: 'satisfied', decidedBy: null });
  });

  it('an agent’s upgrade is refused as permission_required (kind upgrade), above its ceiling as level_ceiling', async () => {
    await aliceOwns();
    expect(await negotiate(agent(), { action: 'upgrade:data-tool:level-2' })).toMatchObject({
      code: 'permission_required',
    });
    expect([...core.db.approvals.values()]).toEqual([
      expect.objectContaining({ kind: 'upgrade', action: 'upgrade:data-tool:level-2', requestedBy: 'agent:k1' }),
    ]);
    expect(await negotiate(agent(1), { action: 'upgrade:data-tool:level-2' })).toMatchObject({
      code: 'level_ceiling',
    });
    expect(core.db.history).toEqual([]);
  });
});

describe('a participant’s action (a remote tool) is decided as any other', () => {
  let upstream: FakeUpstream;

  beforeEach(async () => {
    upstream = new FakeUpstream();
    await installTools(core.registry, [remoteTool('echoes', upstream), quarantinedTool('held', upstream)]);
  });

  const ECHO = { action: 'echoes/echo', args: { message: 'hi' } };
  const NOTE = { action: 'echoes/store-note', args: { message: 'remember' } };

  async function entries(): Promise<string[]> {
    await core.auditStore.flush();
    return core.db.pendingAudit
      .filter((e) => e.event === 'negotiate' && e.tool !== undefined)
      .map((e) => `${e.tool}/${e.action} ${e.outcome} ${e.status}`);
  }

  it('runs a read upstream with the conversation owner’s subject, no unit of work, its entry queued', async () => {
    await aliceOwns();
    expect(await negotiate(agent(), ECHO)).toMatchObject({
      success: true,
      output: { content: [{ type: 'text', text: 'Echo: hi' }] },
      alignment: 'aligned',
    });
    expect(upstream.calls).toEqual([{ action: 'echo', args: { message: 'hi' }, owner: 'alice' }]);
    expect(core.units.started).toBe(0);
    expect(await entries()).toEqual(['echoes/echo success 200']);
  });

  it('hides a quarantined action from everyone but admins, never routes to it, and refuses it named: 409, audited', async () => {
    await aliceOwns(['echoes/*']);
    const snap = core.catalog.snapshot();
    expect(snap.callable.actions.map((a) => a.qualifiedName)).not.toContain('echoes/changed-tool');
    expect(snap.callable.byName.has('held')).toBe(false);
    const mine = core.catalog.toolViews().find((t) => t.name === 'echoes')!;
    expect(mine.capabilities).toEqual(['echo', 'store-note']);
    const admins = core.catalog.toolViews(true).find((t) => t.name === 'echoes')!;
    expect(admins.actions.find((a) => a.name === 'changed-tool')).toMatchObject({ status: 'quarantined' });
    const listed = await negotiate(alice, { action: 'list-tools' });
    expect(JSON.stringify(listed.output)).not.toContain('changed-tool');
    // A bare action never resolves to it.
    expect(await negotiate(alice, { action: 'changed-tool', args: { message: 'x' } })).toMatchObject({
      code: 'no_tool',
    });
    // Named, in every form, it is refused before the policy (which denies echoes/*) and the level.
    for (const req of [
      { action: 'echoes/changed-tool' },
      { action: 'echoes_changed-tool' },
      { action: 'changed-tool', tool: 'echoes' },
      { action: 'held/echo' },
    ]) {
      expect(await negotiate(agent(1), { ...req, args: { message: 'x' } })).toMatchObject({
        success: false,
        code: 'tool_definition_changed',
        error: expect.stringMatching(/changed at participant (echoes|held).*admin approves/),
      });
    }
    expect(upstream.calls).toEqual([]);
    expect(await entries()).toEqual([
      'echoes/changed-tool tool_definition_changed 409',
      'echoes/changed-tool tool_definition_changed 409',
      'echoes/changed-tool tool_definition_changed 409',
      'held/echo tool_definition_changed 409',
    ]);
  });

  it('answers an unreachable upstream with participant_unavailable and its retry delay; nothing written', async () => {
    await aliceOwns();
    upstream.mode = 'down';
    expect(await negotiate(alice, ECHO)).toMatchObject({
      success: false,
      code: 'participant_unavailable',
      retryAfterSeconds: 7,
      error: 'Participant echoes is unavailable; retry after 7 s',
      routing: { tool: 'echoes', action: 'echo' },
    });
    expect(core.units.started).toBe(0);
    expect(core.db.resources.size).toBe(0);
    expect(await entries()).toEqual(['echoes/echo participant_unavailable 503']);
  });

  it('applies the policy, the agent key’s ceiling, the level and dryRun unchanged: the upstream is never called', async () => {
    await aliceOwns(['*/store-*']);
    expect(await negotiate(alice, NOTE)).toMatchObject({ code: 'denied' });
    core.db.conversations.set('c1', { ...core.db.conversations.get('c1')!, policy: { deny: [] } });
    expect(await negotiate(agent(1), NOTE)).toMatchObject({ code: 'level_ceiling' });
    expect(await negotiate(alice, NOTE)).toMatchObject({ code: 'permission_required' });
    expect(await negotiate(alice, { ...ECHO, dryRun: true })).toMatchObject({
      success: true,
      routing: { tool: 'echoes' },
    });
    expect(await negotiate(alice, { action: 'echoes/echo', args: {} })).toMatchObject({ code: 'invalid_args' });
    expect(upstream.calls).toEqual([]);
  });

  it('commits a write’s entry at once (no unit of work: nothing here holds a transaction across the upstream)', async () => {
    await aliceOwns();
    await core.permissions.setByHand(alice, 'c1', 'echoes', 2, 'req-set');
    const before = core.db.pendingAudit.length;
    expect(await negotiate(alice, NOTE)).toMatchObject({
      success: true,
      output: { structuredContent: { noted: 'remember' } },
    });
    expect(core.db.pendingAudit.slice(before)).toEqual([
      expect.objectContaining({ event: 'negotiate', tool: 'echoes', action: 'store-note', outcome: 'success' }),
    ]);
    expect(core.units.started).toBe(1); // the level's
  });

  it('replays exactly the approved call upstream once; an unreachable upstream gives the approval back', async () => {
    await aliceOwns();
    const id = (await negotiate(alice, NOTE)).approval!.id;
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    expect(await negotiate(alice, { ...NOTE, args: { message: 'other' }, approvalId: id })).toMatchObject({
      code: 'approval_mismatch',
    });
    upstream.mode = 'down';
    expect(await negotiate(alice, { ...NOTE, approvalId: id })).toMatchObject({ code: 'participant_unavailable' });
    expect(core.db.approvals.get(id)!.status).toBe('approved');
    upstream.mode = 'up';
    expect(await negotiate(alice, { ...NOTE, approvalId: id })).toMatchObject({ success: true });
    expect(core.db.approvals.get(id)!.status).toBe('used');
    expect(await negotiate(alice, { ...NOTE, approvalId: id })).toMatchObject({ code: 'approval_used' });
    expect(upstream.calls.map((c) => c.args)).toEqual([{ message: 'remember' }]);
  });

  it('keeps a `once` approval used when the upstream answered with an error (it ran there)', async () => {
    await aliceOwns();
    const id = (await negotiate(alice, NOTE)).approval!.id;
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    upstream.mode = 'error';
    expect(await negotiate(alice, { ...NOTE, approvalId: id })).toMatchObject({
      code: 'tool_error',
      error: 'Participant echoes: store-note returned an error',
    });
    expect(core.db.approvals.get(id)!.status).toBe('used');
  });

  it('saveAs needs level 2, binds its approval to the name, and feeds a bundled consumer (seed 002)', async () => {
    await aliceOwns();
    const refused = await negotiate(alice, { ...ECHO, saveAs: 'greeting' });
    expect(refused).toMatchObject({ code: 'permission_required', alignment: 'agnostic' });
    expect(refused.approvalReason).toMatch(/echoes needs level 2 \(write\) for echo saveAs:greeting/);
    expect(approvals()).toEqual(['user:alice echo saveAs:greeting pending']);
    expect(await negotiate(alice, { ...ECHO, saveAs: 'bad name!' })).toMatchObject({ code: 'invalid_args' });
    const id = refused.approval!.id;
    await core.approvals.approve(alice, 'c1', id, { scope: 'once' }, 'req-2');
    // The approval covers the call with that name, not another.
    expect(await negotiate(alice, { ...ECHO, saveAs: 'other', approvalId: id })).toMatchObject({
      code: 'approval_mismatch',
    });
    expect(await negotiate(alice, { ...ECHO, approvalId: id })).toMatchObject({ code: 'approval_mismatch' });
    const before = core.db.pendingAudit.length;
    expect(await negotiate(alice, { ...ECHO, saveAs: 'greeting', approvalId: id })).toMatchObject({ success: true });
    expect(core.db.resources.get('c1\u0000greeting')).toMatchObject({
      data: 'Echo: hi',
      createdBy: 'echoes',
      updatedBy: 'echoes',
      version: 1,
    });
    // The entry went with the resource's write (one statement: a single-statement unit).
    expect(core.db.pendingAudit.slice(before)).toEqual([
      expect.objectContaining({ tool: 'echoes', action: 'echo', outcome: 'success', approvalId: id }),
    ]);
    // structuredContent is what is saved when there is one; a second save updates.
    await core.permissions.setByHand(alice, 'c1', 'echoes', 2, 'req-set');
    await negotiate(alice, { ...NOTE, saveAs: 'greeting' });
    expect(core.db.resources.get('c1\u0000greeting')).toMatchObject({ data: { noted: 'remember' }, version: 2 });
    // A bundled tool consumes what the participant produced.
    await negotiate(alice, { ...ECHO, saveAs: 'words' });
    await core.permissions.setByHand(alice, 'c1', 'transform-tool', 2, 'req-set');
    expect(
      await negotiate(alice, {
        action: 'transform-tool/transform-resource',
        args: { name: 'words', operation: 'uppercase', target: 'shout' },
      }),
    ).toMatchObject({ success: true });
    expect(core.db.resources.get('c1\u0000shout')).toMatchObject({ data: 'ECHO: HI', createdBy: 'transform-tool' });
  });

  it('saveAs works for a bundled action too: its output, written with its unit of work', async () => {
    await aliceOwns();
    await core.permissions.setByHand(alice, 'c1', 'calculator', 2, 'req-set');
    expect(await negotiate(alice, { action: 'calculator/add', args: { a: 2, b: 3 }, saveAs: 'sum' })).toMatchObject({
      success: true,
    });
    expect(core.db.resources.get('c1\u0000sum')).toMatchObject({ createdBy: 'calculator', version: 1 });
  });
});
