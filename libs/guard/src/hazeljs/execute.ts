// `AgentGatekeeper.execute` step by step: check the call (every mode), decide, record the decision
// before anything runs, refuse or ask for approval as decided, run the tool, check and redact its
// output, record the outcome. A record a critical sink could not take fails the call closed.
import { isJsonValue, type JsonValue, readOptions } from '@gatehouse/contracts';
import { type GatekeeperDecision, type GatekeeperMode } from '@gatehouse/gatekeeper';
import { type ApprovalCall, type ApprovalProvider } from './approvals.js';
import { type AuditLogger, recordDecision, recordStep, type RecordTarget, type StepRecord } from './audit-record.js';
import { auditCorrelation, configError, GatekeeperError, readInvocationContext, type ToolInvocationContext } from '@gatehouse/gatekeeper/hazeljs';
import { type HazelGatekeeperDecision } from './decision.js';
import { redactKeys, SENSITIVE_KEYS } from './redact.js';
import { parseWith, type ProtectedTool, readTool } from './tools.js';

export interface ExecuteEnv {
  readonly audit: AuditLogger;
  readonly critical: boolean;
  readonly mode: GatekeeperMode;
  readonly approvalProvider: ApprovalProvider | undefined;
}

type Decide = (ctx: ToolInvocationContext<JsonValue>, tool: ProtectedTool<unknown, unknown>) => { readonly decision: GatekeeperDecision; readonly hazel: HazelGatekeeperDecision };

const auditFailed = () => new GatekeeperError('HAZELJS.POLICY', 'the decision could not be recorded (fail closed)');

/** Records a step; a critical sink's refusal fails the call closed. */
async function step(env: ExecuteEnv, record: StepRecord, target: RecordTarget): Promise<void> {
  if (!(await recordStep(env.audit, record, target))) throw auditFailed();
}

/** Records a refused call (best effort: the refusal stands either way) and throws it. */
async function refuse(env: ExecuteEnv, error: GatekeeperError, target: RecordTarget): Promise<never> {
  const field = error.details['field'];
  await recordStep(env.audit, { boundary: 'tool', action: 'gatekeeper.execute', decision: 'denied', code: error.code, reason: 'the call is malformed', detail: typeof field === 'string' ? { field } : {} }, target);
  throw error;
}

async function readCall(env: ExecuteEnv, input: unknown): Promise<{ ctx: ToolInvocationContext<JsonValue>; tool: ProtectedTool<unknown, unknown>; target: RecordTarget }> {
  let target: RecordTarget = { correlation: {} };
  try {
    const o = (() => {
      try {
        return readOptions('execute', input, ['context', 'tool']);
      } catch (cause) {
        throw new GatekeeperError('HAZELJS.VALIDATION', cause instanceof Error ? cause.message : 'execute takes { context, tool }', { field: 'execute' });
      }
    })();
    const tool = readTool(o['tool']);
    target = { toolName: tool.name, correlation: {} };
    const ctx = readInvocationContext(o['context']);
    target = { toolName: tool.name, invocationId: ctx.invocationId, correlation: auditCorrelation(ctx) };
    // The policies judge context.toolName: a different tool must not run under their decision.
    if (ctx.toolName !== tool.name) throw new GatekeeperError('HAZELJS.VALIDATION', 'context.toolName is not the tool being executed', { field: 'toolName' });
    return { ctx, tool, target };
  } catch (error) {
    if (error instanceof GatekeeperError) return refuse(env, error, target);
    throw error;
  }
}

function denial(hazel: HazelGatekeeperDecision, target: RecordTarget): GatekeeperError {
  const details = {
    policyIds: [...hazel.policyIds],
    decisionCode: hazel.code ?? 'HAZELJS.DENIED',
    ...(target.invocationId === undefined ? {} : { invocationId: target.invocationId }),
    ...(target.toolName === undefined ? {} : { toolName: target.toolName }),
    ...(hazel.gatehouse.fault === undefined ? {} : { fault: hazel.gatehouse.fault }),
  };
  if (hazel.code === 'HAZELJS.VALIDATION') return new GatekeeperError('HAZELJS.VALIDATION', 'the call is malformed', details);
  return new GatekeeperError('HAZELJS.DENIED', 'the gatekeeper denied the call', details);
}

/** Asks for, finds, or uses the approval of this exact call; the reviewer's edit when there is one. */
async function approve(env: ExecuteEnv, ctx: ToolInvocationContext<JsonValue>, tool: ProtectedTool<unknown, unknown>, hazel: HazelGatekeeperDecision, target: RecordTarget): Promise<JsonValue | undefined> {
  const provider = env.approvalProvider;
  if (provider === undefined) throw configError('an approval is required but no approvalProvider is configured', { field: 'approvalProvider' });
  const call: ApprovalCall = { context: ctx, ...(tool.redactFields === undefined ? {} : { redactFields: tool.redactFields }), ...(tool.description === undefined ? {} : { description: tool.description }) };
  const policyIds = [...hazel.policyIds];
  const pending = async (approvalId: string): Promise<never> => {
    await step(env, { boundary: 'approval', action: 'approval.request', decision: 'approval-required', code: 'HAZELJS.APPROVAL_PENDING', reason: 'approval required by policy', detail: { approvalId } }, target);
    throw new GatekeeperError('HAZELJS.APPROVAL_REQUIRED', 'a person must approve this call first', { approvalId, policyIds });
  };
  const refused = async (approvalId: string, status: string | undefined): Promise<never> => {
    await step(env, { boundary: 'approval', action: 'approval.use', decision: 'denied', code: 'HAZELJS.APPROVAL_INVALID', reason: 'the approval does not grant this call', detail: { approvalId, status: status ?? 'another-call' } }, target);
    throw new GatekeeperError('HAZELJS.APPROVAL_INVALID', 'the approval does not grant this call', { approvalId, status: status ?? 'another-call', policyIds });
  };
  let approvalId = ctx.approvalToken;
  if (approvalId === undefined) {
    const created = await provider.create(call);
    if (created.status === 'pending') return pending(created.approvalId);
    if (created.status !== 'approved') return refused(created.approvalId, created.status);
    approvalId = created.approvalId;
  }
  const used = await provider.consume(approvalId, call);
  if (used.status === 'pending') return pending(approvalId);
  if (!used.valid) return refused(approvalId, used.status);
  await step(env, { boundary: 'approval', action: 'approval.use', decision: 'allowed', code: 'HAZELJS.APPROVAL_CONSUMED', reason: 'approved by a reviewer, used once', detail: { approvalId } }, target);
  return used.editedInput;
}

/** The input to run once approved: the reviewer's edit (held to the tool's schema too), else `input`. */
async function approvedInput(env: ExecuteEnv, ctx: ToolInvocationContext<JsonValue>, tool: ProtectedTool<unknown, unknown>, hazel: HazelGatekeeperDecision, target: RecordTarget, input: unknown): Promise<unknown> {
  const edited = await approve(env, ctx, tool, hazel, target);
  if (edited === undefined) return input;
  const checked = await parseWith(tool.inputSchema, edited);
  if (!checked.ok) return refuse(env, new GatekeeperError('HAZELJS.VALIDATION', "the reviewer's edit does not match the tool input schema", { field: 'input' }), target);
  return checked.data;
}

async function run(env: ExecuteEnv, ctx: ToolInvocationContext<JsonValue>, tool: ProtectedTool<unknown, unknown>, input: unknown, target: RecordTarget): Promise<unknown> {
  const started = Date.now();
  const seconds = () => (Date.now() - started) / 1000;
  let output: unknown;
  try {
    output = await tool.execute(input, Object.freeze({ ...ctx, input }) as ToolInvocationContext<unknown>);
  } catch (error) {
    await step(env, { boundary: 'tool', action: 'tool.execute', decision: 'error', code: 'HAZELJS.EXECUTION', reason: 'tool execution failed', detail: { durationSeconds: seconds() } }, target);
    throw new GatekeeperError('HAZELJS.EXECUTION', 'tool execution failed', { toolName: tool.name, invocationId: ctx.invocationId }, error);
  }
  const checked = await parseWith(tool.outputSchema, output);
  if (!checked.ok) return refuse(env, new GatekeeperError('HAZELJS.VALIDATION', 'the tool output does not match its output schema', { field: 'output' }), target);
  output = checked.data;
  if (tool.redactFields !== undefined && tool.redactFields.length > 0 && output !== null && typeof output === 'object') {
    // What cannot be walked as JSON cannot be redacted: refused, not handed over unredacted.
    if (!isJsonValue(output)) return refuse(env, new GatekeeperError('HAZELJS.VALIDATION', 'the tool output must be JSON to be redacted', { field: 'output' }), target);
    output = redactKeys(output, [...SENSITIVE_KEYS, ...tool.redactFields]);
  }
  await step(env, { boundary: 'tool', action: 'tool.execute', decision: 'allowed', code: 'HAZELJS.TOOL_COMPLETED', reason: 'tool completed', detail: { durationSeconds: seconds() } }, target);
  return output;
}

/** The whole of `execute` (see the module comment); resolves with the decision and the output. */
export async function runApproved(env: ExecuteEnv, input: unknown, decide: Decide): Promise<{ readonly decision: HazelGatekeeperDecision; readonly output: unknown }> {
  const { ctx, tool, target } = await readCall(env, input);
  // HazelJS's structural validation: a call the tool's schema refuses is blocked in every mode.
  const parsed = await parseWith(tool.inputSchema, ctx.input);
  if (!parsed.ok) return refuse(env, new GatekeeperError('HAZELJS.VALIDATION', 'the input does not match the tool input schema', { field: 'input' }), target);
  const { decision, hazel } = decide(ctx, tool);
  if (!(await recordDecision(env.audit, decision, target))) throw auditFailed();
  let runInput: unknown = parsed.data;
  switch (decision.effect) {
    case 'deny':
      throw denial(hazel, target);
    case 'require-approval':
      runInput = await approvedInput(env, ctx, tool, hazel, target, runInput);
      break;
    case 'rewrite': {
      const rewritten = await parseWith(tool.inputSchema, decision.rewrittenInput);
      if (!rewritten.ok) return refuse(env, new GatekeeperError('HAZELJS.VALIDATION', 'the rewritten input does not match the tool input schema', { field: 'input' }), target);
      runInput = rewritten.data;
      break;
    }
    case 'allow':
      // A tool that always needs a person (HazelJS tool or Skillgate metadata) gets one in enforce mode.
      if (tool.requiresApproval === true && env.mode === 'enforce') runInput = await approvedInput(env, ctx, tool, hazel, target, runInput);
      break;
    default: {
      const unreachable: never = decision.effect;
      return unreachable;
    }
  }
  return { decision: hazel, output: await run(env, ctx, tool, runInput, target) };
}
