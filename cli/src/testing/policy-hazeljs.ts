import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A fresh temporary folder: `file(name, text)` writes a file in it and answers its path; `remove()` deletes the folder (pass it to afterAll). */
export function tempFiles(prefix: string): { file: (name: string, text: string) => string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    file: (name, text) => {
      const p = path.join(dir, name);
      writeFileSync(p, text);
      return p;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The parts of the HazelJS refund config that the `policy` specs vary. */
export interface RefundConfigOptions {
  readonly mode: 'enforce' | 'audit';
  /** Written as `policySetId:` when given (without it the bundle is `hazeljs`). */
  readonly policySetId?: string;
  /** Adds `enforceTenantField: tenantId` to the policy's rules. */
  readonly enforceTenantField?: boolean;
  /** The rule's `allowWhen` expression. */
  readonly allowWhen: string;
}

/** agent-gatekeeper.yaml with the seed's refund policy (refund-agent, stripe.refund, production, priority 100: at most 100, above 50 needs approval), default deny. */
export function refundConfigYaml(options: RefundConfigOptions): string {
  return [
    `mode: ${options.mode}`,
    'defaultDecision: deny',
    ...(options.policySetId === undefined ? [] : [`policySetId: ${options.policySetId}`]),
    'policies:',
    '  - id: refund-agent-stripe-policy',
    '    version: "1.0.0"',
    '    priority: 100',
    '    match: { agents: [refund-agent], tools: [stripe.refund], environments: [production] }',
    '    rules:',
    '      maxTransactionAmount: 100',
    ...(options.enforceTenantField === true ? ['      enforceTenantField: tenantId'] : []),
    '      requireApprovalWhenFieldGt: [{ field: amount, threshold: 50 }]',
    `      allowWhen: "${options.allowWhen}"`,
    '',
  ].join('\n');
}
