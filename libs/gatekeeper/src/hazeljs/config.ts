// agent-gatekeeper.yaml (HazelJS's policy config) as a gatehouse bundle: data only, so it can be
// validated like any bundle, published to the policy service, signed and followed by every guard.
import { readOptions } from '@gatehouse/contracts';
import { assertGatekeeperMode, compileGatekeeperBundle, type GatekeeperBundle, type GatekeeperMode, MAX_BUNDLE_TEXT } from '../index.js';
import { parse as parseYaml } from 'yaml';
import { configError } from './errors.js';
import { compileHazelPolicies, type DefaultDecision } from './policies.js';

/** A HazelJS config as a gatehouse bundle, with the mode and default it declares. */
export interface ConvertedConfig {
  readonly bundle: GatekeeperBundle;
  readonly mode: GatekeeperMode;
  readonly defaultDecision: DefaultDecision;
  /** Each HazelJS policy with its priority (the bundle holds them at one priority). */
  readonly policies: readonly { readonly id: string; readonly version: string; readonly priority: number }[];
}

/** Parses agent-gatekeeper.yaml (or JSON) text; HAZELJS.CONFIG (with where it failed) when it is neither. */
export function parseGatekeeperConfig(text: string): unknown {
  if (typeof text !== 'string') throw configError('the config must be text', { field: '(root)' });
  if (text.length > MAX_BUNDLE_TEXT) throw configError(`the config exceeds ${MAX_BUNDLE_TEXT} characters`, { field: '(root)' });
  const json = text.trimStart().startsWith('{');
  try {
    return json ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100, uniqueKeys: true, prettyErrors: false });
  } catch (cause) {
    // The parser's message may quote the text: keep only where it failed.
    const position = !json && cause !== null && typeof cause === 'object' && 'pos' in cause && Array.isArray(cause.pos) ? Number(cause.pos[0]) : undefined;
    throw configError(`the config is not valid ${json ? 'JSON' : 'YAML'}`, position === undefined ? { field: '(root)' } : { field: '(root)', position });
  }
}

/**
 * A HazelJS config (`{ mode?, defaultDecision?, policySetId?, policies }`, text or parsed) as a
 * gatehouse bundle, compiled as a guard's load compiles it. A function rule is refused
 * (GATEKEEPER.FUNCTION_RULE): it cannot be signed or distributed; it runs in-process only.
 */
export function toGatekeeperBundle(config: unknown): ConvertedConfig {
  const data = typeof config === 'string' ? parseGatekeeperConfig(config) : config;
  let o: Readonly<Record<string, unknown>>;
  try {
    o = readOptions('agent-gatekeeper config', data, ['mode', 'defaultDecision', 'policySetId', 'policies']);
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : 'the config must be an object', { field: '(root)' });
  }
  const mode = assertGatekeeperMode(o['mode']);
  const defaultDecision = o['defaultDecision'] ?? 'deny';
  if (defaultDecision !== 'deny' && defaultDecision !== 'allow') throw configError('defaultDecision must be deny or allow', { field: 'defaultDecision' });
  if (o['policySetId'] !== undefined && typeof o['policySetId'] !== 'string') throw configError('policySetId must be a string', { field: 'policySetId' });
  const compiled = compileHazelPolicies(o['policies'] ?? [], { functions: 'refuse', defaultDecision, ...(o['policySetId'] === undefined ? {} : { policySetId: o['policySetId'] as string }) });
  const { bundle } = compileGatekeeperBundle(compiled.bundle);
  const policies = [...compiled.origins.values()].flatMap((origin) => (origin.kind === 'rules' && origin.id !== undefined ? [{ id: origin.id, version: origin.version, priority: origin.priority }] : []));
  return Object.freeze({ bundle, mode, defaultDecision, policies });
}
