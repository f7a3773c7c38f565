// The HazelJS forms of `gatehouse policy` (`hazel gatekeeper validate | simulate | explain`):
//   validate --config agent-gatekeeper.yaml [--json]
//   simulate --agent <id> --tool <name> [--input <file>] [--tenant <id>] [--environment <env>]
//   explain --invocation <file>
// with --config <agent-gatekeeper.yaml> as a policy source beside --bundle and --service. The
// config is converted to a gatehouse bundle (data only) and judged by the same gatekeeper.
import { readFileSync } from 'node:fs';
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { createGatekeeper, type Gatekeeper, type GatekeeperContext } from '@gatehouse/gatekeeper';
import { gatekeeperContextOfInvocation, toGatekeeperBundle } from '@gatehouse/gatekeeper/hazeljs';
import { PolicyUsageError } from './policy-usage.js';

export const HAZELJS_USAGE = `  gatehouse policy validate --config <agent-gatekeeper.yaml|json> [--json]                       (HazelJS form)
  gatehouse policy (simulate|explain) (--agent <id> --tool <name> [--input <file>] [--tenant <id>] [--environment <env>] | --invocation <file>)
      (--config <file> | --bundle <file> | --service <url> --policy-set <id>)                      (HazelJS form)`;

/** The flags the HazelJS forms add to simulate and explain. */
export const HAZELJS_FLAGS = {
  config: { type: 'string' },
  agent: { type: 'string' },
  tool: { type: 'string' },
  input: { type: 'string' },
  tenant: { type: 'string' },
  environment: { type: 'string' },
  invocation: { type: 'string' },
} as const;

// A config in code can hold function rules: they run in-process only, and are never read here.
const CODE_FILE = /\.(c|m)?[jt]sx?$/;

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new PolicyUsageError(`cannot read the ${what} file`);
  }
}

function refusal(error: unknown): { valid: false; code: string; message: string; details: unknown } {
  if (!(error instanceof GatehouseError)) throw error;
  return { valid: false, code: error.code, message: error.message, details: error.details };
}

function convert(file: string): ReturnType<typeof toGatekeeperBundle> {
  if (CODE_FILE.test(file)) {
    throw new GatehouseError('HAZELJS.CONFIG', 'a config in code can hold function rules, which run in the agent process only and cannot be validated, signed or distributed: give the YAML or JSON config', { category: 'validation', details: { field: '(file)' } });
  }
  return toGatekeeperBundle(read(file, 'config'));
}

/** `validate --config <file> [--json]`: exit 0 valid, 1 refused (JSON with the code), 2 usage. */
export function validateConfig(argv: readonly string[], print: (text: string) => void): number {
  const json = argv.includes('--json');
  const rest = argv.filter((a) => a !== '--json');
  if (rest.length !== 2 || rest[0] !== '--config') throw new PolicyUsageError('validate needs exactly one --config <file>');
  try {
    const converted = convert(rest[1]!);
    const { bundle, mode, defaultDecision, policies } = converted;
    if (json) print(JSON.stringify({ valid: true, policySetId: bundle.policySetId, policyCount: policies.length, mode, defaultDecision, policies, bundle }));
    else print(`policy validate: ${bundle.policySetId}: ${policies.length} polic${policies.length === 1 ? 'y' : 'ies'}, valid (HazelJS config: mode ${mode}, defaultDecision ${defaultDecision})`);
    return 0;
  } catch (error) {
    print(JSON.stringify(refusal(error)));
    return 1;
  }
}

/** A gatekeeper for `--config`: enforce (or disabled) as HazelJS's simulate judged, whatever the config's mode. */
export function gatekeeperFromConfig(file: string): Gatekeeper {
  const { bundle, mode } = convert(file);
  return createGatekeeper({ bundle, mode: mode === 'disabled' ? 'disabled' : 'enforce' });
}

type HazelValues = { readonly [K in keyof typeof HAZELJS_FLAGS]?: string | undefined };

/** The context of `--agent/--tool/--input` or `--invocation`; undefined when neither form was used. */
export function hazelContext(values: HazelValues): GatekeeperContext | undefined {
  const byFlags = values.agent !== undefined || values.tool !== undefined || values.input !== undefined || values.tenant !== undefined;
  if (values.invocation !== undefined) {
    if (byFlags) throw new PolicyUsageError('give --invocation <file> or --agent/--tool, not both');
    let parsed: unknown;
    try {
      parsed = JSON.parse(read(values.invocation, 'invocation'));
    } catch (error) {
      if (error instanceof PolicyUsageError) throw error;
      throw new PolicyUsageError('the invocation file is not JSON');
    }
    try {
      return gatekeeperContextOfInvocation(parsed);
    } catch (error) {
      if (!(error instanceof GatehouseError)) throw error;
      throw new PolicyUsageError(`the invocation is not a ToolInvocationContext: ${error.message}`);
    }
  }
  if (!byFlags) return undefined;
  if (!values.agent || !values.tool) throw new PolicyUsageError('--agent <id> and --tool <name> go together');
  let input: JsonValue = {};
  if (values.input !== undefined) {
    try {
      input = JSON.parse(read(values.input, 'input')) as JsonValue;
    } catch (error) {
      if (error instanceof PolicyUsageError) throw error;
      throw new PolicyUsageError('the input file is not JSON');
    }
  }
  // HazelJS's CLI judged a call in `development` unless told otherwise.
  const identity = { agent: values.agent, environment: values.environment ?? 'development', ...(values.tenant === undefined ? {} : { tenant: values.tenant }) };
  return { identity, call: { tool: values.tool }, input };
}
