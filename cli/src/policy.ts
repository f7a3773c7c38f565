import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GatehouseError, type JsonValue, topicName } from '@gatehouse/contracts';
import { compileGatekeeperBundle, createGatekeeper, type GatekeeperContext } from '@gatehouse/gatekeeper';
import { createKafkaClient, kafkaConfigFromEnv, offsetsAtTime, replayTopic } from '@gatehouse/kafka';
import { describeWhatIf, type RecordedDecision, recordedGatekeeperDecision, whatIf } from './policy-what-if.js';
import { gatekeeperFromConfig, HAZELJS_FLAGS, HAZELJS_USAGE, hazelContext, validateConfig } from './policy-hazeljs.js';
import { PolicyUsageError } from './policy-usage.js';

// `gatehouse policy validate|simulate|explain`: on local files, or against the policy service
// (`--service <url>`, API key from GATEHOUSE_POLICY_API_KEY). Nothing here executes a tool or
// creates an approval: simulate and explain only compute the decision.

export const POLICY_USAGE = `  gatehouse policy validate <bundle.yaml|json>
  gatehouse policy (simulate|explain) --context <context.json> (--bundle <file> | --service <url> --policy-set <id> [--revision <n>])
  gatehouse policy what-if --bundle <candidate> --from <time> [--environment <env>] [--namespace <ns>] [--json]
${HAZELJS_USAGE}`;

export { PolicyUsageError };

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new PolicyUsageError(`cannot read the ${what} file`);
  }
}

function readContext(file: string): GatekeeperContext {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readText(file, 'context'));
  } catch (error) {
    if (error instanceof PolicyUsageError) throw error;
    throw new PolicyUsageError('the context file is not JSON: { "identity": {...}, "call": { "tool": "..." }, "input": ... }');
  }
  const ctx = parsed as Partial<GatekeeperContext> | null;
  if (ctx === null || typeof ctx !== 'object' || typeof ctx.identity !== 'object' || typeof ctx.call?.tool !== 'string' || !('input' in ctx)) {
    throw new PolicyUsageError('the context needs identity, call.tool and input');
  }
  return { identity: ctx.identity ?? {}, call: { tool: ctx.call.tool }, input: ctx.input as JsonValue };
}

/** Runs one `policy` command; resolves to the exit code (0 ok, 1 invalid bundle or refused decision, 2 usage). */
export async function runPolicyCommand(command: string | undefined, argv: readonly string[], print: (text: string) => void): Promise<number> {
  if (command === 'validate') {
    if (argv.includes('--config')) return validateConfig(argv, print);
    const [file, extra] = argv;
    if (!file || extra !== undefined) throw new PolicyUsageError('validate needs exactly one bundle file');
    try {
      // Compiled as a guard's load compiles it: schema first, then every expression.
      const { bundle, predicates } = compileGatekeeperBundle(readText(file, 'bundle'));
      const needs = predicates.length > 0 ? ` (needs the guard's predicates: ${predicates.join(', ')})` : '';
      print(`policy validate: ${bundle.policySetId}: ${bundle.policies.length} polic${bundle.policies.length === 1 ? 'y' : 'ies'}, valid${needs}`);
      return 0;
    } catch (error) {
      if (!(error instanceof GatehouseError)) throw error;
      print(JSON.stringify({ valid: false, code: error.code, message: error.message, details: error.details }));
      return 1;
    }
  }
  if (command === 'what-if') return runWhatIf(argv, print);
  if (command !== 'simulate' && command !== 'explain') throw new PolicyUsageError(`unknown policy command`);
  const { values } = parseArgs({
    args: [...argv],
    options: { context: { type: 'string' }, bundle: { type: 'string' }, service: { type: 'string' }, 'policy-set': { type: 'string' }, revision: { type: 'string' }, ...HAZELJS_FLAGS },
    strict: true,
  });
  // The call: --context (gatehouse), or HazelJS's --agent/--tool/--input or --invocation.
  const hazel = hazelContext(values);
  if (Boolean(values.context) === (hazel !== undefined)) throw new PolicyUsageError(`${command} needs exactly one of --context <file>, --agent/--tool or --invocation <file>`);
  const ctx = hazel ?? readContext(values.context!);
  if ([values.bundle, values.config, values.service].filter(Boolean).length !== 1) throw new PolicyUsageError(`${command} needs exactly one of --bundle <file>, --config <file> or --service <url>`);
  if (values.bundle || values.config) {
    const gatekeeper = values.config ? gatekeeperFromConfig(values.config) : createGatekeeper({ bundle: readText(values.bundle!, 'bundle') });
    const result = command === 'simulate' ? gatekeeper.simulate(ctx) : gatekeeper.explain(ctx);
    print(JSON.stringify(result, null, 2));
    return 0;
  }
  const policySet = values['policy-set'];
  if (!policySet) throw new PolicyUsageError('--service needs --policy-set <id>');
  const key = process.env['GATEHOUSE_POLICY_API_KEY'];
  if (!key) throw new PolicyUsageError('--service needs the operator API key in GATEHOUSE_POLICY_API_KEY');
  const revision = values.revision === undefined ? undefined : Number(values.revision);
  if (revision !== undefined && (!Number.isSafeInteger(revision) || revision < 1)) throw new PolicyUsageError('--revision must be a positive integer');
  const url = new URL(`/v1/policy-sets/${encodeURIComponent(policySet)}/${command}`, values.service);
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...ctx, ...(revision !== undefined && { revision }) }),
  });
  const body = await response.text();
  print(body);
  return response.ok ? 0 : 1;
}

/**
 * `what-if`: the gatekeeper decisions recorded on the audit topic since `--from` (an ISO time, or
 * epoch milliseconds), re-made under the candidate bundle. Exit 0 with the report; nothing is
 * executed, approved or written.
 */
async function runWhatIf(argv: readonly string[], print: (text: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: { bundle: { type: 'string' }, from: { type: 'string' }, environment: { type: 'string' }, namespace: { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
  });
  if (!values.bundle) throw new PolicyUsageError('what-if needs --bundle <candidate file>');
  if (!values.from) throw new PolicyUsageError('what-if needs --from <ISO time or epoch ms>');
  const from = /^\d+$/.test(values.from) ? new Date(Number(values.from)) : new Date(values.from);
  if (Number.isNaN(from.getTime())) throw new PolicyUsageError('--from must be an ISO time or epoch milliseconds');
  let candidate;
  try {
    candidate = createGatekeeper({ bundle: readText(values.bundle, 'bundle') });
  } catch (error) {
    if (!(error instanceof GatehouseError)) throw error;
    print(JSON.stringify({ valid: false, code: error.code, message: error.message, details: error.details }));
    return 1;
  }
  const namespace = values.namespace ?? process.env['GATEHOUSE_TOPIC_NAMESPACE'] ?? undefined;
  const recorded = await readRecordedDecisions(from, namespace);
  const report = whatIf(candidate, recorded, { from: from.toISOString(), ...(values.environment === undefined ? {} : { environment: values.environment }) });
  print(values.json ? JSON.stringify(report) : describeWhatIf(report));
  return 0;
}

// Reads the audit topic from the first record appended at or after `from` (the broker's index by
// append time), keeping the gatekeeper decisions whose own time is not earlier either.
async function readRecordedDecisions(from: Date, namespace: string | undefined): Promise<RecordedDecision[]> {
  const kafka = createKafkaClient(kafkaConfigFromEnv('gatehouse-cli'));
  const topic = topicName('audit', namespace);
  const admin = kafka.admin();
  await admin.connect();
  let fromOffsets: Record<number, string>;
  try {
    fromOffsets = await offsetsAtTime(admin, topic, from);
  } finally {
    await admin.disconnect();
  }
  const recorded: RecordedDecision[] = [];
  await replayTopic(kafka, 'audit', {
    ...(namespace ? { namespace } : {}),
    fromOffsets,
    onRecord: (r) => {
      const decision = recordedGatekeeperDecision(r.event);
      if (decision !== undefined && Date.parse(decision.time) >= from.getTime()) recorded.push(decision);
    },
  });
  // Partitions are read one after another; the report reads in time order.
  return recorded.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}
