import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { approvalIdForCall } from '@gatehouse/approvals';
import { ApprovalCancelledV1, canonicalJson, createEvent, type Scope, signEvent } from '@gatehouse/contracts';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { createInMemoryApprovalGateway } from './in-memory-approval-gateway.js';
import { type ApprovalRequestInput } from './types.js';

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const requester = { id: 'agent:billing', role: 'agent', kind: 'agent' as const };

function request(executionId = 'wf/run-1', extra: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput {
  const call = { tenant: 'acme', connectorId: 'payments.refund', executionId, toolCallId: 'call-1' };
  return { call, arguments: { amount: 5 }, requester, reason: 'refunds need a person', deadline: new Date(Date.now() + 60_000).toISOString(), ...extra };
}

/** Without redactions the arguments hash is the plain sha-256 of their canonical JSON. */
const scopeOf = (r: ApprovalRequestInput): Scope => ({ tenant: r.call.tenant, connectorId: r.call.connectorId, executionId: r.call.executionId, argumentsHash: hash(canonicalJson(r.arguments)) });
const idOf = (r: ApprovalRequestInput) => approvalIdForCall(scopeOf(r), requester.id, r.call.toolCallId);

describe('in-memory approval gateway (the shared core and fold)', () => {
  it('appends the request, waits, and resolves with the grant once a reviewer approves', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    const waiting = gateway.awaitApproval(r, { timeoutMs: 5_000 });
    const asked = await gateway.waitForRequest();
    expect(asked.payload).toMatchObject({ approvalId: idOf(r), scope: scopeOf(r), arguments: { amount: 5 }, requester, redactedPaths: [] });
    expect(asked.subject).toBe(idOf(r));
    expect(gateway.decide(idOf(r), { verdict: 'approve' })).toEqual({ kind: 'accepted' });
    const { grant, published } = await waiting;
    expect(published).toBe(true);
    expect(grant).toMatchObject({ approvalId: idOf(r), scope: scopeOf(r), reviewer: { id: 'user:reviewer' } });
    expect(grant.editedArguments).toBeUndefined();
  });

  it('hands over the edited arguments of an approval with edits', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    const waiting = gateway.awaitApproval(r, { timeoutMs: 5_000 });
    await gateway.waitForRequest();
    gateway.decide(idOf(r), { verdict: 'approve-with-edits', editedArguments: { amount: 3 } });
    await expect(waiting).resolves.toMatchObject({ grant: { editedArguments: { amount: 3 } } });
  });

  it.each([
    ['deny', 'APPROVAL.DENIED'],
    ['expire', 'APPROVAL.EXPIRED'],
    ['service cancel', 'APPROVAL.CANCELLED'],
  ] as const)('fails closed on %s with %s', async (what, code) => {
    let clock = Date.now();
    const gateway = createInMemoryApprovalGateway({ now: () => clock });
    const r = request('wf/run-1', { deadline: new Date(clock + 1_000).toISOString() });
    const waiting = gateway.awaitApproval(r, { timeoutMs: 5_000 });
    await gateway.waitForRequest();
    if (what === 'deny') gateway.decide(idOf(r), { verdict: 'deny', comment: 'no' });
    if (what === 'expire') {
      expect(gateway.expire(idOf(r))).toEqual({ kind: 'rejected', reason: 'not-yet-due' }); // the log's clock decides, not ours
      clock += 2_000;
      expect(gateway.expire(idOf(r))).toEqual({ kind: 'accepted' });
    }
    if (what === 'service cancel') {
      // Signed by the approval service: a cancellation only it or the requester's own key can make.
      const cancel = createEvent(ApprovalCancelledV1, { source: 'service:approval', tenant: 'acme', subject: idOf(r) }, { approvalId: idOf(r), by: { id: 'system:ops', role: 'system', kind: 'system' }, reason: 'run ended' });
      expect(gateway.append(cancel)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'unsigned' });
      gateway.append(signEvent(cancel, gateway.signingKey));
    }
    await expect(waiting).rejects.toMatchObject({ name: 'ApprovalGatewayError', code, details: { approvalId: idOf(r) } });
  });

  it('finds an earlier decision without asking again, and a retried call waits on its pending approval', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    const first = gateway.awaitApproval(r, { timeoutMs: 50 });
    await expect(first).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT', retryable: true });
    const retry = gateway.awaitApproval(r, { timeoutMs: 5_000 });
    gateway.decide(idOf(r), { verdict: 'approve' });
    await expect(retry).resolves.toMatchObject({ published: false });
    await expect(gateway.awaitApproval(r)).resolves.toMatchObject({ published: false, grant: { approvalId: idOf(r) } });
    expect(gateway.requests()).toHaveLength(1);
  });

  it('does not withdraw the request on its own timeout: the deadline on the log governs', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    await expect(gateway.awaitApproval(r, { timeoutMs: 20 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    expect(gateway.records.map((x) => x.event.type)).toEqual(['ApprovalRequested']);
    expect(gateway.approval(idOf(r))?.status).toBe('pending');
  });

  it('withdraws the request when the caller aborts, as the requester', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    const controller = new AbortController();
    const waiting = gateway.awaitApproval(r, { timeoutMs: 5_000, signal: controller.signal });
    await gateway.waitForRequest();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'APPROVAL.ABORTED' });
    expect(gateway.records.map((x) => x.event.type)).toEqual(['ApprovalRequested', 'ApprovalCancelled']);
    expect(gateway.approval(idOf(r))).toMatchObject({ status: 'cancelled', cancelledBy: requester });
  });

  it('keeps the request while another caller in the process still waits for it', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    const controller = new AbortController();
    const leaving = gateway.awaitApproval(r, { timeoutMs: 5_000, signal: controller.signal });
    const staying = gateway.awaitApproval(r, { timeoutMs: 5_000 });
    await gateway.waitForRequest();
    controller.abort();
    await expect(leaving).rejects.toMatchObject({ code: 'APPROVAL.ABORTED' });
    gateway.decide(idOf(r), { verdict: 'approve' });
    await expect(staying).resolves.toMatchObject({ grant: { approvalId: idOf(r) } });
    expect(gateway.requests()).toHaveLength(1);
  });

  it('refuses an already aborted signal before asking anything', async () => {
    const gateway = createInMemoryApprovalGateway();
    await expect(gateway.awaitApproval(request(), { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'APPROVAL.ABORTED' });
    expect(gateway.records).toHaveLength(0);
  });

  it('resolves several concurrent waiters, each from its own decision', async () => {
    const gateway = createInMemoryApprovalGateway();
    const rs = [1, 2, 3, 4, 5].map((i) => request(`wf/run-${i}`));
    const waits = rs.map((r) => gateway.awaitApproval(r, { timeoutMs: 5_000 }).then(() => 'granted', (e: { code?: string }) => e.code));
    for (const r of rs) await gateway.waitForRequest((q) => q.payload.approvalId === idOf(r));
    rs.forEach((r, i) => gateway.decide(idOf(r), { verdict: i % 2 === 0 ? 'approve' : 'deny' }));
    expect(await Promise.all(waits)).toEqual(['granted', 'APPROVAL.DENIED', 'granted', 'APPROVAL.DENIED', 'granted']);
  });

  it('fails closed when the log cannot be read, for waiting and new calls alike', async () => {
    const gateway = createInMemoryApprovalGateway();
    const waiting = gateway.awaitApproval(request(), { timeoutMs: 5_000 });
    await gateway.waitForRequest();
    gateway.setAvailable(false);
    await expect(waiting).rejects.toMatchObject({ code: 'APPROVAL.UNAVAILABLE', retryable: true });
    await expect(gateway.awaitApproval(request('wf/run-2'))).rejects.toMatchObject({ code: 'APPROVAL.UNAVAILABLE' });
    expect(gateway.requests()).toHaveLength(1);
  });

  it('refuses a request that breaks its contract, without saying what was in it', async () => {
    const gateway = createInMemoryApprovalGateway();
    const bad = request('wf/run-1', { deadline: 'tomorrow', arguments: { card: '4111111111111111' } });
    const error = await gateway.awaitApproval(bad).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'APPROVAL.REQUEST_INVALID', category: 'validation' });
    expect(JSON.stringify(error) + String(error)).not.toContain('4111');
    expect(gateway.records).toHaveLength(0);
  });

  it('ignores a forged decision for a request the fold never accepted', async () => {
    const gateway = createInMemoryApprovalGateway();
    const r = request();
    // Attached at once: the short timeout may fire before the request is seen below.
    const waiting = expect(gateway.awaitApproval(r, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    await gateway.waitForRequest();
    // The requester approving its own request is rejected by the fold and changes nothing.
    expect(gateway.decide(idOf(r), { verdict: 'approve', reviewer: { ...requester, role: 'approver' } })).toEqual({ kind: 'rejected', reason: 'self-approval' });
    await waiting;
  });

  it('fails pending waits with APPROVAL.CLOSED on close', async () => {
    const gateway = createInMemoryApprovalGateway();
    const waiting = gateway.awaitApproval(request(), { timeoutMs: 5_000 });
    await gateway.waitForRequest();
    await gateway.close();
    await expect(waiting).rejects.toMatchObject({ code: 'APPROVAL.CLOSED' });
    await expect(gateway.awaitApproval(request())).rejects.toMatchObject({ code: 'APPROVAL.CLOSED' });
  });

  it('validates its options', async () => {
    const gateway = createInMemoryApprovalGateway();
    await expect(gateway.awaitApproval(request(), { timeoutMs: 0 })).rejects.toThrow(TypeError);
    await expect(gateway.awaitApproval(request(), { signal: 'stop' as never })).rejects.toThrow(TypeError);
    expect(() => createInMemoryApprovalGateway({ defaultTimeoutMs: -1 })).toThrow(TypeError);
  });

  it("refuses a request for a tenant its agent key is not bound to, and sends nothing", async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: testAgentKey(requester.id, ['acme']) });
    const foreign = request('wf/run-globex', { call: { tenant: 'globex', connectorId: 'payments.refund', executionId: 'wf/run-globex', toolCallId: 'call-1' } });
    expect(() => gateway.describe(foreign)).toThrow(expect.objectContaining({ code: 'APPROVAL.REQUEST_INVALID' }));
    await expect(gateway.awaitApproval(foreign, { timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'APPROVAL.REQUEST_INVALID' });
    expect(gateway.records).toHaveLength(0);
  });
});
