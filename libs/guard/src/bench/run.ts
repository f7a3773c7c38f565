// Benchmark entry point: `node libs/guard/dist/bench/run.js` after building the guard.
// Each bench prints its own figures; add one with a single line in the list.
import { benchAgentStream } from './agent-stream.bench.js';
import { benchAuditPublish } from './audit-publish.bench.js';
import { benchConnector } from './connector.bench.js';
import { benchContentPolicies } from './content-policies.bench.js';
import { benchDetectorQuality } from './detector-quality.bench.js';
import { benchGatekeeper } from './gatekeeper.bench.js';
import { benchGatewayStart } from './gateway-start.bench.js';
import { benchSchemaGuardrail } from './schema-guardrail.bench.js';

const benches: readonly (() => Promise<void>)[] = [
  benchContentPolicies,
  benchDetectorQuality,
  benchAgentStream,
  benchConnector,
  benchSchemaGuardrail,
  benchGatekeeper,
  benchAuditPublish,
  benchGatewayStart,
];

for (const bench of benches) await bench();
