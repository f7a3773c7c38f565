import { readFileSync, writeFileSync } from 'node:fs';
import { canonicalJson, type ChainReport, verifyAuditChain } from '@gatehouse/contracts';
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

/** A short human report; the JSON report has every finding. */
export function describeReport(report: ChainReport): string {
  const lines = [`audit verify: ${report.events} events, ${report.producers.length} producers, ${report.unchained} unchained, ${report.ok ? 'chain intact' : `${report.findings.length} findings`}`];
  for (const f of report.findings) {
    const what =
      f.kind === 'gap' ? `missing seq ${f.missingFrom}..${f.missingTo}` : f.kind === 'reordered' ? `seq ${f.seq} read after ${f.afterSeq}` : `seq ${f.seq}`;
    lines.push(`  ${f.kind.padEnd(9)} ${f.producer} ${what} at ${f.position}`);
  }
  return lines.join('\n');
}

export { verifyAuditChain };
