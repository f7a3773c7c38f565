// HazelJS APIs of the seed gatehouse deliberately does not provide: each refuses with a typed
// error (HAZELJS.UNSUPPORTED) that names the gatehouse equivalent, so a migrated import fails
// loudly where it is called rather than doing something else quietly.
import { unsupported } from '@gatehouse/gatekeeper/hazeljs';

/** Refused: it wires approvals through a silent Redis → HumanTask → memory fallback; pick a provider explicitly. */
export function createAgentGatekeeperBundle(_options?: unknown): never {
  throw unsupported('createAgentGatekeeperBundle', 'new AgentGatekeeper({ policies, auditSink, approvalProvider: createKafkaApprovalProvider(gateway) }) and createToolExecutorGate(gatekeeper)');
}

/** Refused: gatehouse has no HazelJS AgentRuntime to bind to. */
export function bindGatekeeper(_runtime?: unknown, _bundle?: unknown): never {
  throw unsupported('bindGatekeeper', 'createToolExecutorGate(gatekeeper) as the runtime authorizationGate, or createGuardedAgent for a Mastra agent');
}

/** Refused with `createAgentGatekeeperBundle`. */
export function formatGatekeeperBootLine(_bundle?: unknown, _options?: unknown): never {
  throw unsupported('formatGatekeeperBootLine', "the gatekeeper's gatekeeper.version() and the audit topic's decisions");
}
