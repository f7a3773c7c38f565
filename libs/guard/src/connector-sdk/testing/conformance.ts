import { RequestContext } from '@mastra/core/request-context';
import { GatehouseError } from '@gatehouse/contracts';
import { AuditLogger } from '../../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../../context.js';
import { type AnyConnector, type Connector, invokeConnector } from '../connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY, PRINCIPAL_PERMISSIONS_CONTEXT_KEY } from '../context-keys.js';
import { type ConnectorApprovalGrant, type ConnectorExecutionIdentity, type PrincipalPermissions } from '../types.js';
import { callThrough, CONNECTOR_ENTRY_POINTS, type ConnectorEntryPoint } from './entry-points.js';

/** Builds the connector under test around the kit's audit log (so the kit sees every decision). */
export type ConnectorConformanceFactory = (runtime: { readonly audit: AuditLogger }) => AnyConnector;

/** Trusted context of one conformance request. */
export interface ConnectorConformanceRequest {
  readonly grants?: readonly ConnectorApprovalGrant[] | readonly string[];
  readonly identity?: ConnectorExecutionIdentity;
  readonly permissions?: PrincipalPermissions;
  readonly toolCallId?: string;
  /** Any other trusted keys (dry run, isolation scope, idempotency key, ...). */
  readonly context?: Readonly<Record<string, unknown>>;
}

export interface ConnectorConformanceCase {
  readonly name: string;
  readonly input: unknown;
  readonly request: ConnectorConformanceRequest;
  /** `refused`: no path may execute the connector; the refusal must carry `code` when given. */
  readonly expect: { readonly outcome: 'refused'; readonly code?: string } | { readonly outcome: 'allowed' };
  /** Entry points to drive (default: all four). */
  readonly entryPoints?: readonly ConnectorEntryPoint[];
}

export type ConnectorConformanceFindingCode =
  | 'GATE_ESCAPED' // the connector executed where it must have been refused
  | 'WRONG_REFUSAL_CODE'
  | 'REFUSAL_NOT_AUDITED'
  | 'ALLOWED_CALL_REFUSED'
  | 'CHANGED_CONNECTOR_ACCEPTED';

export interface ConnectorConformanceFinding {
  readonly case: string;
  readonly entryPoint: ConnectorEntryPoint;
  readonly code: ConnectorConformanceFindingCode;
  /** Codes observed (decision codes, error codes) — never inputs or outputs. */
  readonly observed: readonly string[];
}

export interface ConnectorConformanceReport {
  readonly passed: boolean;
  readonly runs: number;
  readonly findings: readonly ConnectorConformanceFinding[];
}

const EXECUTED = new Set(['CONNECTOR.ALLOWED', 'CONNECTOR.REPLAYED']);

function contextFor(request: ConnectorConformanceRequest): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'conformance', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'conformance', agentId: 'conformance', runId: request.identity?.runId ?? 'run-conformance', entryPath: 'conformance' });
  if (request.grants !== undefined) rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, request.grants);
  if (request.identity !== undefined) rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, request.identity);
  if (request.permissions !== undefined) rc.set(PRINCIPAL_PERMISSIONS_CONTEXT_KEY, request.permissions);
  for (const [key, value] of Object.entries(request.context ?? {})) rc.set(key, value);
  return rc;
}

function codeOf(error: unknown): string | undefined {
  if (error instanceof GatehouseError) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Drives a connector through every entry point (agent loop, workflow step, nested tool,
 * direct invoke) with requests that must be refused or allowed, reads the decisions from
 * the audit log, and reports every path that escaped a gate. Also checks that a copy of the
 * connector with a changed surface is refused.
 */
export async function runConnectorConformance(factory: ConnectorConformanceFactory, cases: readonly ConnectorConformanceCase[]): Promise<ConnectorConformanceReport> {
  const findings: ConnectorConformanceFinding[] = [];
  let runs = 0;
  for (const testCase of cases) {
    for (const entryPoint of testCase.entryPoints ?? CONNECTOR_ENTRY_POINTS) {
      runs += 1;
      const audit = new AuditLogger();
      const connector = factory({ audit });
      const outcome = await callThrough(entryPoint, connector, testCase.input, contextFor(testCase.request), testCase.request.toolCallId ?? 'call-1');
      const decisions = audit.events().filter((e) => e.boundary === 'tool');
      const observed = [...decisions.map((e) => `${e.decision}:${e.code}`), ...(outcome.ok ? [] : [`error:${codeOf(outcome.error) ?? 'uncoded'}`])];
      const executed = decisions.some((e) => EXECUTED.has(e.code));
      if (testCase.expect.outcome === 'refused') {
        // Egress is refused inside execute (the gate allowed the call, runtime.fetch did not
        // let it out), so an allow followed by a recorded refusal is not an escape.
        if (outcome.ok) {
          findings.push({ case: testCase.name, entryPoint, code: 'GATE_ESCAPED', observed });
          continue;
        }
        const refusal = decisions.find((e) => e.decision === 'denied' || e.decision === 'error');
        if (!refusal) findings.push({ case: testCase.name, entryPoint, code: 'REFUSAL_NOT_AUDITED', observed });
        else if (testCase.expect.code && refusal.code !== testCase.expect.code) findings.push({ case: testCase.name, entryPoint, code: 'WRONG_REFUSAL_CODE', observed });
      } else if (!outcome.ok || !executed) {
        findings.push({ case: testCase.name, entryPoint, code: 'ALLOWED_CALL_REFUSED', observed });
      }
    }
  }
  // A changed connector (a copy with another execute) must never be invocable.
  runs += 1;
  const original = factory({ audit: new AuditLogger() });
  const changed = Object.assign(Object.create(Object.getPrototypeOf(original) as object) as object, original, { execute: async () => 'tampered' });
  try {
    await invokeConnector(changed as unknown as Connector, cases[0]?.input ?? {}, {});
    findings.push({ case: 'changed connector', entryPoint: 'direct', code: 'CHANGED_CONNECTOR_ACCEPTED', observed: [] });
  } catch (error) {
    const code = codeOf(error);
    if (code !== 'CONNECTOR.NOT_A_CONNECTOR' && code !== 'CONNECTOR.INTEGRITY_VIOLATION') {
      findings.push({ case: 'changed connector', entryPoint: 'direct', code: 'CHANGED_CONNECTOR_ACCEPTED', observed: [code ?? 'uncoded'] });
    }
  }
  return Object.freeze({ passed: findings.length === 0, runs, findings: Object.freeze(findings) });
}

/** Ready-made refusal cases every approval-gated connector must pass. */
export const conformanceCases = {
  noGrant: (input: unknown, identity: ConnectorExecutionIdentity): ConnectorConformanceCase => ({
    name: 'no grant', input, request: { identity }, expect: { outcome: 'refused', code: 'CONNECTOR.APPROVAL_REQUIRED' },
  }),
  legacyGrantArray: (input: unknown, connectorId: string, identity: ConnectorExecutionIdentity): ConnectorConformanceCase => ({
    name: 'legacy grant array', input, request: { identity, grants: [connectorId] }, expect: { outcome: 'refused', code: 'CONNECTOR.GRANT_INVALID' },
  }),
  wrongScope: (input: unknown, connectorId: string, identity: ConnectorExecutionIdentity & { suspension: NonNullable<ConnectorExecutionIdentity['suspension']> }): ConnectorConformanceCase => ({
    name: 'grant for another tool call',
    input,
    request: { identity, toolCallId: 'call-1', grants: [{ scope: 'tool-call', connectorId, workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension, toolCallId: 'call-other' }] },
    expect: { outcome: 'refused', code: 'CONNECTOR.APPROVAL_REQUIRED' },
  }),
  missingPermission: (input: unknown, identity: ConnectorExecutionIdentity): ConnectorConformanceCase => ({
    name: 'missing permission', input, request: { identity, permissions: { principalId: 'conformance', permissions: [] } }, expect: { outcome: 'refused', code: 'CONNECTOR.PERMISSION_MISSING' },
  }),
};
