#!/usr/bin/env node
// gatehouse — operator command line.
//   gatehouse audit dump --out <file> [--namespace <ns>]
//   gatehouse audit verify (--file <file> | --topic) [--namespace <ns>] [--json]   (sources judged with GATEHOUSE_TRUSTED_KEYS_FILE)
//   gatehouse (approval | idempotency-ledger | policy) replay [--compare] [--schema <name>]   (also: approvals, ledger)
//   gatehouse policy validate <bundle> | policy (simulate|explain) --context <file> (--bundle <file> | --service <url> --policy-set <id>)
//   gatehouse policy what-if --bundle <candidate> --from <time>
// Exit codes: 0 intact (or rebuilt and equal), 1 tampering found (or not equal), 2 usage or runtime error,
// 3 (audit verify) intact but records whose source no checkpoint verifies (a log older than checkpoints, no trusted keys).
// `<service> replay` reads that service's environment (GATEHOUSE_DATABASE_URL, GATEHOUSE_TRUSTED_KEYS_FILE, ...).
import { parseArgs } from 'node:util';
import { GatehouseError, keyringFromEnv } from '@gatehouse/contracts';
import { approvalProjection, approvalRetainMsFromEnv } from '@gatehouse/approval-projection';
import { ledgerProjection } from '@gatehouse/ledger-projection';
import { policyProjection } from '@gatehouse/policy-projection';
import { runReplayCli, SERVICES } from '@gatehouse/service-runtime';
import { POLICY_USAGE, PolicyUsageError, runPolicyCommand } from './policy.js';
import { configuredKeyring, describeReport, exitCodeOf, readAuditFile, readAuditTopic, verifyAudit, writeAuditFile } from './audit.js';

const USAGE = `usage:
  gatehouse audit dump --out <file> [--namespace <ns>]
  gatehouse audit verify (--file <file> | --topic) [--namespace <ns>] [--json]
  gatehouse (approval | idempotency-ledger | policy) replay [--compare] [--schema <name>]
${POLICY_USAGE}`;

const printLine = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);
const approvalReplay = (argv: readonly string[]) => runReplayCli(SERVICES.approval, approvalProjection(keyringFromEnv(), { retainMs: approvalRetainMsFromEnv() }), { argv, print: printLine });
const ledgerReplay = (argv: readonly string[]) => runReplayCli(SERVICES['idempotency-ledger'], ledgerProjection(keyringFromEnv()), { argv, print: printLine });

/**
 * `<service> replay`: rebuilds the service's projection from its topic (from offset 0, or where the
 * topic's beginning was deleted, from the fold's checkpoints) into a fresh schema and, with
 * --compare, checks it against the live one. Each reads the keyring and settings from the
 * environment when asked, as the service does.
 */
const REPLAYS: ReadonlyMap<string, (argv: readonly string[]) => Promise<number>> = new Map([
  ['approval', approvalReplay],
  ['approvals', approvalReplay],
  ['idempotency-ledger', ledgerReplay],
  ['ledger', ledgerReplay],
  ['policy', (argv: readonly string[]) => runReplayCli(SERVICES.policy, policyProjection(keyringFromEnv()), { argv, print: printLine })],
]);

async function main(argv: readonly string[]): Promise<number> {
  const [area, command, ...rest] = argv;
  const replay = area === undefined ? undefined : REPLAYS.get(area);
  if (replay !== undefined && command === 'replay') return replay(rest);
  if (area === 'policy') return runPolicyCommand(command, rest, (text) => process.stdout.write(`${text}\n`));
  if (area !== 'audit' || (command !== 'dump' && command !== 'verify')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: { out: { type: 'string' }, file: { type: 'string' }, topic: { type: 'boolean' }, namespace: { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
  });
  const namespace = values.namespace ?? process.env['GATEHOUSE_TOPIC_NAMESPACE'] ?? undefined;
  if (command === 'dump') {
    if (!values.out) throw new UsageError('dump needs --out <file>');
    const records = await readAuditTopic(namespace);
    writeAuditFile(values.out, records);
    process.stdout.write(`audit dump: ${records.length} events written to ${values.out}\n`);
    return 0;
  }
  if (Boolean(values.file) === Boolean(values.topic)) throw new UsageError('verify needs exactly one of --file <file> or --topic');
  const keyring = configuredKeyring();
  const records = values.file ? readAuditFile(values.file) : await readAuditTopic(namespace);
  const report = verifyAudit(records, keyring);
  process.stdout.write(`${values.json ? JSON.stringify(report) : describeReport(report)}\n`);
  return exitCodeOf(report);
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const code = error instanceof GatehouseError ? ` (${error.code})` : '';
    process.stderr.write(error instanceof UsageError || error instanceof PolicyUsageError ? `${error.message}\n${USAGE}\n` : `gatehouse: ${(error as Error).message ?? 'failed'}${code}\n`);
    process.exit(2);
  },
);
