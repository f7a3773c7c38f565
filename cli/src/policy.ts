import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { createGatekeeper, type GatekeeperContext, parseGatekeeperBundle } from '@gatehouse/guard/gatekeeper';

// `gatehouse policy validate|simulate|explain`: on local files, or against the policy service
// (`--service <url>`, API key from GATEHOUSE_POLICY_API_KEY). Nothing here executes a tool or
// creates an approval: simulate and explain only compute the decision.

export const POLICY_USAGE = `  gatehouse policy validate <bundle.yaml|json>
  gatehouse policy (simulate|explain) --context <context.json> (--bundle <file> | --service <url> --policy-set <id> [--revision <n>])`;

export class PolicyUsageError extends Error {}

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
    const [file, extra] = argv;
    if (!file || extra !== undefined) throw new PolicyUsageError('validate needs exactly one bundle file');
    try {
      const bundle = parseGatekeeperBundle(readText(file, 'bundle'));
      print(`policy validate: ${bundle.policySetId}: ${bundle.policies.length} polic${bundle.policies.length === 1 ? 'y' : 'ies'}, valid`);
      return 0;
    } catch (error) {
      if (!(error instanceof GatehouseError)) throw error;
      print(JSON.stringify({ valid: false, code: error.code, message: error.message, details: error.details }));
      return 1;
    }
  }
  if (command !== 'simulate' && command !== 'explain') throw new PolicyUsageError(`unknown policy command`);
  const { values } = parseArgs({
    args: [...argv],
    options: { context: { type: 'string' }, bundle: { type: 'string' }, service: { type: 'string' }, 'policy-set': { type: 'string' }, revision: { type: 'string' } },
    strict: true,
  });
  if (!values.context) throw new PolicyUsageError(`${command} needs --context <file>`);
  const ctx = readContext(values.context);
  if (Boolean(values.bundle) === Boolean(values.service)) throw new PolicyUsageError(`${command} needs exactly one of --bundle <file> or --service <url>`);
  if (values.bundle) {
    const gatekeeper = createGatekeeper({ bundle: readText(values.bundle, 'bundle') });
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
