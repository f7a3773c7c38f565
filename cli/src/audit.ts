import { readFileSync, writeFileSync } from 'node:fs';
import { canonicalJson, type ChainReport, type Keyring, keyringFromEnv, SIGNING_ENV, type SourceFinding, type SourceReport, verifyAuditChain, verifyAuditSources } from '@gatehouse/contracts';
import { createKafkaClient, kafkaConfigFromEnv, replayTopic } from '@gatehouse/kafka';

/** Reads every record of the audit topic as `{ event, position }`, in partition order. */
export async function readAuditTopic(namespace: string | undefined): Promise<{ event: unknown; position: string }[]> {
  const kafka = createKafkaClient(kafkaConfigFromEnv('gatehouse-cli'));
  const out: { event: unknown; position: string }[] = [];
  await replayTopic(kafka, 'audit', {
    ...(namespace ? { namespace } : {}),
    onRecord: (r) => void out.push({ event: r.event, position: `${r.topic}/${r.partition}/${r.offset}` }),
    // A record that fails its contract is still evidence: keep its raw bytes for the verifier.
    onPoison: (p) => void out.push({ event: safeParse(p.value?.toString('utf8') ?? 'null'), position: `${p.topic}/${p.partition}/${p.offset}` }),
  });
  return out;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** One event per line, canonical JSON: the raw export `verify --file` reads. */
export function writeAuditFile(path: string, records: readonly { event: unknown }[]): void {
  writeFileSync(path, records.map((r) => `${canonicalJson(r.event)}\n`).join(''));
}

export function readAuditFile(path: string): { event: unknown; position: string }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((line, i) => ({ line, position: `${path}:${i + 1}` }))
    .filter(({ line }) => line.trim().length > 0)
    .map(({ line, position }) => ({ event: safeParse(line), position }));
}

/** What `audit verify` found: the hash chain, and (with trusted keys) every record's source. */
export interface VerifyReport extends ChainReport {
  /** Exit code 0: the chain is intact and every record is verified for its source and tenant. */
  readonly ok: boolean;
  /** Null when no trusted keys are configured: no record's source can be verified. */
  readonly sources: SourceReport | null;
}

/** The keyring `verify` judges sources with, when one is configured (GATEHOUSE_TRUSTED_KEYS_FILE or _KEYS). */
export function configuredKeyring(env: NodeJS.ProcessEnv = process.env): Keyring | undefined {
  if (!env[SIGNING_ENV.trustedKeysFile] && !env[SIGNING_ENV.trustedKeys]) return undefined;
  return keyringFromEnv(env);
}

/** Checks the chain and, with a keyring, the sources of every record of `records`. */
export function verifyAudit(records: readonly { event: unknown; position: string }[], keyring: Keyring | undefined): VerifyReport {
  const chain = verifyAuditChain(records);
  const sources = keyring ? verifyAuditSources(records, keyring) : null;
  return { ...chain, ok: chain.ok && sources !== null && sources.ok && sources.unverified === 0, sources };
}

/**
 * 0: intact and every record verified; 1: tampering (a chain finding, a forbidden record, a
 * forged or foreign checkpoint); 3: intact, but some records are unverified (a log written
 * before checkpoints, a producer without a key, a checkpoint not written yet, or no trusted keys).
 */
export function exitCodeOf(report: VerifyReport): 0 | 1 | 3 {
  if (report.ok) return 0;
  if (report.findings.length > 0 || (report.sources !== null && !report.sources.ok)) return 1;
  return 3;
}

function describeSourceFinding(f: SourceFinding): string {
  switch (f.kind) {
    case 'forbidden':
      return `  forbidden  ${f.id} ${f.source} tenant ${f.tenant}: ${f.reason}${f.keyId ? ` (key ${f.keyId})` : ''}, checkpoint ${f.checkpoint} at ${f.position}`;
    case 'untrusted-checkpoint':
      return `  untrusted  checkpoint ${f.id} of ${f.source}: ${f.reason}${f.keyId ? ` (key ${f.keyId})` : ''} at ${f.position}`;
    case 'forbidden-checkpoint':
      return `  foreign    checkpoint ${f.id} of ${f.source}: key ${f.keyId} may not speak for it at ${f.position}`;
    case 'malformed-checkpoint':
      return `  malformed  checkpoint ${f.id} at ${f.position}`;
    default: {
      const exhaustive: never = f;
      return exhaustive;
    }
  }
}

function describeSources(sources: SourceReport | null, events: number): string[] {
  if (!sources) return [`audit sources: not verified, no trusted keys (set ${SIGNING_ENV.trustedKeysFile}); ${events} records unverified`];
  const missing = sources.missing > 0 ? `, ${sources.missing} checkpointed records not on the log (expired or removed)` : '';
  const unknown = sources.unknownKeyCheckpoints > 0 ? `, ${sources.unknownKeyCheckpoints} of keys not trusted here` : '';
  const lines = [`audit sources: ${sources.verified} verified, ${sources.unverified} unverified, ${sources.forbidden} forbidden (${sources.checkpoints} checkpoints${unknown}${missing})`];
  for (const f of sources.findings) lines.push(describeSourceFinding(f));
  for (const g of sources.unverifiedSources) lines.push(`  unverified ${g.source} tenant ${g.tenant}: ${g.records} records no checkpoint covers, first at ${g.first}`);
  return lines;
}

/** A short human report; the JSON report has every finding. */
export function describeReport(report: VerifyReport): string {
  const lines = [`audit verify: ${report.events} events, ${report.producers.length} producers, ${report.unchained} unchained, ${report.findings.length === 0 ? 'chain intact' : `${report.findings.length} findings`}`];
  for (const f of report.findings) {
    const what =
      f.kind === 'gap' ? `missing seq ${f.missingFrom}..${f.missingTo}` : f.kind === 'reordered' ? `seq ${f.seq} read after ${f.afterSeq}` : `seq ${f.seq}`;
    lines.push(`  ${f.kind.padEnd(9)} ${f.producer} ${what} at ${f.position}`);
  }
  lines.push(...describeSources(report.sources, report.events));
  return lines.join('\n');
}
