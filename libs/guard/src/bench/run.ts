// Benchmark entry point: `node libs/guard/dist/bench/run.js` after building the guard.
// Each bench prints its own figures; add one with a single line in the list. Names given as
// arguments run only the benches whose names hold one of them, e.g. `run.js gatekeeper schema`.
import { benchAgentStream } from './agent-stream.bench.js';
import { benchAuditPublish } from './audit-publish.bench.js';
import { benchConnector } from './connector.bench.js';
import { benchContentPolicies } from './content-policies.bench.js';
import { benchDetectorQuality } from './detector-quality.bench.js';
import { benchGatekeeper } from './gatekeeper.bench.js';
import { benchGatewayStart } from './gateway-start.bench.js';
import { benchSchemaGuardrail } from './schema-guardrail.bench.js';
import { benchSecretsPeer } from './secrets-peer.bench.js';

const benches: readonly (() => Promise<void>)[] = [
  benchContentPolicies,
  benchDetectorQuality,
  benchSecretsPeer,
  benchAgentStream,
  benchConnector,
  benchSchemaGuardrail,
  benchGatekeeper,
  benchAuditPublish,
  benchGatewayStart,
];

const wanted = process.argv.slice(2).map((name) => name.toLowerCase());
const chosen = benches.filter((bench) => wanted.length === 0 || wanted.some((name) => bench.name.toLowerCase().includes(name)));
if (chosen.length === 0) throw new Error(`no guard bench matches ${wanted.join(', ')}; they are ${benches.map((b) => b.name).join(', ')}`);
for (const bench of chosen) await bench();
