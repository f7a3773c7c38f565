// Secrets and PII scanning against the tool a user would otherwise pick: secretlint with its
// recommended preset (@secretlint/core's lintSource, in process), on the same 4 KB texts in the
// same run. piiSecrets() does more (PII as well as secrets) and must still find every text
// secretlint flags: the recall row checks that, so a faster scan cannot buy its speed by
// missing what the peer finds. Two input shapes: the mixed corpus of the content-policies bench,
// and the clean corpus of real code and configuration with the dirty set's secrets mixed in.
import { lintSource } from '@secretlint/core';
import { creator as recommendedPreset } from '@secretlint/secretlint-rule-preset-recommend';
import { peerPackage, recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import type { PolicyContext, PolicyEvaluator } from '../policy-engine/types.js';
import { readCleanCorpus } from './corpus/clean-corpus.js';
import { dirtySamples } from './corpus/dirty-set.js';
import { buildCorpus, MIXED_CORPUS_SEED, segment } from './mixed-corpus.js';
import { type Random, seeded } from './seeded-random.js';

const BENCHMARK = 'guard: secrets and PII against secretlint';
const SOURCE = 'libs/guard/src/bench/secrets-peer.bench.ts';
const SEGMENT_CHARS = 4096;
const MIXED_CHARS = 4_000_000;
const WARM_UP_PASSES = 1;
const TIMED_PASSES = 3;
const TARGET = { on: 'ratio', atLeast: 3, source: 'issue 22: ≥ 3x secretlint, recall unchanged' } as const;
const SECRET_DETECTORS = new Set(['awsAccessKey', 'privateKey', 'jwt', 'secretAssignment', 'highEntropy']);

const CONTEXT: PolicyContext = {
  phase: 'output',
  channel: 'answer',
  offset: 0,
  segmentLength: SEGMENT_CHARS,
  previousSegmentLength: 0,
  final: true,
  signal: new AbortController().signal,
};

const SECRETLINT_CONFIG = { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommendedPreset }] };

interface Input {
  readonly name: string;
  readonly texts: readonly string[];
}

/** Prints and records piiSecrets() and secretlint throughput on two input shapes, and piiSecrets' recall of secretlint's finds. */
export async function benchSecretsPeer(): Promise<void> {
  const peer = peerPackage('@secretlint/core');
  const preset = peerPackage('@secretlint/secretlint-rule-preset-recommend');
  for (const input of [mixedCorpus(), cleanCorpusWithSecrets()]) {
    const bytes = input.texts.reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0);
    const megabytes = bytes / 1e6;
    const policy = piiSecrets();
    const ours = flaggedBy(policy, input.texts);
    const theirs = await flaggedBySecretlint(input.texts);
    const missed = [...theirs.flagged].filter(([i]) => !ours.has(i)).map(([, rules]) => rules);
    const oursMs = await timed(() => Promise.resolve(flaggedBy(policy, input.texts)));
    const theirsMs = await timed(() => flaggedBySecretlint(input.texts));
    const oursRate = (megabytes * TIMED_PASSES) / (oursMs / 1000);
    const theirsRate = (megabytes * TIMED_PASSES) / (theirsMs / 1000);
    const rules = [...theirs.rules.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([rule, n]) => `${rule.replace('@secretlint/secretlint-rule-', '')}=${n}`).join(' ');
    const caseName = `${input.name}: ${megabytes.toFixed(1)} MB in ${input.texts.length.toLocaleString('en')} texts of ≤ 4 KB`;
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: caseName,
      metric: 'piiSecrets (secrets and PII) throughput',
      unit: 'MB/s',
      value: oursRate,
      baseline: `secretlint (lintSource, recommended preset ${preset.split(' ')[1]}), the same texts`,
      baselineValue: theirsRate,
      peer,
      target: TARGET,
      note: `secretlint flagged ${theirs.flagged.size} texts (${rules || 'none'}); piiSecrets flagged ${ours.size}${missed.length > 0 ? `; missed ${missed.join(' ')}` : ''}`,
    });
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: caseName,
      metric: 'texts secretlint flags that piiSecrets flags too',
      unit: 'texts',
      // A run where secretlint flags nothing checks nothing: the inputs carry secrets it knows, so 0 is a broken input.
      value: theirs.flagged.size - missed.length,
      baseline: 'every text secretlint flags',
      baselineValue: theirs.flagged.size,
      target: { on: 'ratio', atLeast: 1, source: 'issue 22: recall unchanged' },
    });
    console.log(
      `secrets-peer: ${caseName}: piiSecrets ${oursRate.toFixed(1)} MB/s, secretlint ${theirsRate.toFixed(1)} MB/s ` +
        `(ratio ${(oursRate / theirsRate).toFixed(2)}x); secretlint flagged ${theirs.flagged.size} (${rules}), ` +
        `piiSecrets flagged ${ours.size}, missed ${missed.length}${missed.length > 0 ? ` (${missed.join(' ')})` : ''}`,
    );
  }
}

/** The content-policies corpus, one text in ten carrying a credential in a format secretlint knows. */
function mixedCorpus(): Input {
  const random = seeded(MIXED_CORPUS_SEED + 1);
  const texts = segment(buildCorpus(MIXED_CHARS, MIXED_CORPUS_SEED), SEGMENT_CHARS - 300);
  return { name: 'mixed corpus', texts: texts.map((text, i) => (i % 10 === 0 ? `${text}\n${peerKnownSecret(random, i / 10)}\n` : text)) };
}

/** Real code and configuration, cut into 4 KB texts; every third carries a dirty-set secret or one in a format secretlint knows. */
function cleanCorpusWithSecrets(): Input {
  const random = seeded(MIXED_CORPUS_SEED + 2);
  const secrets = dirtySamples().filter((sample) => SECRET_DETECTORS.has(sample.detector));
  const texts = readCleanCorpus().flatMap((file) => segment(file.text, SEGMENT_CHARS - 300));
  const secret = (n: number) => (n % 2 === 0 ? secrets[(n / 2) % secrets.length]!.text : peerKnownSecret(random, n));
  return { name: 'code and configuration with secrets', texts: texts.map((text, i) => (i % 3 === 0 ? `${text}\n${secret(i / 3)}\n` : text)) };
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BASE64 = `${ALNUM}+/`;
const chars = (random: Random, alphabet: string, length: number): string =>
  Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');

/**
 * A fake credential, drawn at random, in one of the formats secretlint's recommended preset
 * reports (vendor-prefixed tokens, credentials in URLs, AWS secret keys, whole PEM keys), in the
 * kind of line it turns up in. Generated at run time so no secret-shaped string is committed.
 */
function peerKnownSecret(random: Random, n: number): string {
  const pem = Array.from({ length: 4 }, () => chars(random, BASE64, 64)).join('\n');
  const formats = [
    () => `AWS_SECRET_ACCESS_KEY=${chars(random, BASE64, 40)}`,
    () => `-----BEGIN RSA PRIVATE KEY-----\n${pem}\n-----END RSA PRIVATE KEY-----`,
    () => `SLACK_BOT=xoxb-${chars(random, '0123456789', 12)}-${chars(random, '0123456789', 13)}-${chars(random, ALNUM, 24)}`,
    () => `git clone with ghp_${chars(random, ALNUM, 36)} as the token`,
    () => `//registry.npmjs.org/ npm_${chars(random, ALNUM, 36)}`,
    () => `curl https://deploy:${chars(random, ALNUM, 14)}@artifacts.example.com/v1/upload`,
    () => `stripe.setApiKey("sk_live_${chars(random, ALNUM, 32)}")`,
    () => `DATABASE_URL=postgres://app:${chars(random, ALNUM, 16)}@db.internal.example.com:5432/orders`,
    () => `gitlab: glpat-${chars(random, ALNUM, 20)}`,
    () => `client = Anthropic(api_key="sk-ant-api03-${chars(random, ALNUM, 93)}AA")`,
  ];
  return formats[n % formats.length]!();
}

function flaggedBy(policy: PolicyEvaluator, texts: readonly string[]): Set<number> {
  const flagged = new Set<number>();
  texts.forEach((text, i) => {
    const decision = policy.evaluate(text, { ...CONTEXT, segmentLength: text.length });
    if (decision instanceof Promise) throw new Error('secrets-peer bench: piiSecrets answered asynchronously');
    if (!decision.allowed) flagged.add(i);
  });
  return flagged;
}

async function flaggedBySecretlint(texts: readonly string[]): Promise<{ flagged: Map<number, string>; rules: Map<string, number> }> {
  const flagged = new Map<number, string>();
  const rules = new Map<string, number>();
  for (let i = 0; i < texts.length; i++) {
    const result = await lintSource({
      source: { filePath: `text-${i}.txt`, content: texts[i]!, ext: '.txt', contentType: 'text' },
      options: { config: SECRETLINT_CONFIG, noPhysicFilePath: true },
    });
    if (result.messages.length === 0) continue;
    flagged.set(i, result.messages.map((m) => m.ruleId.replace('@secretlint/secretlint-rule-', '')).join('+'));
    for (const message of result.messages) rules.set(message.ruleId, (rules.get(message.ruleId) ?? 0) + 1);
  }
  return { flagged, rules };
}

async function timed(pass: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < WARM_UP_PASSES; i++) await pass();
  const started = performance.now();
  for (let i = 0; i < TIMED_PASSES; i++) await pass();
  return performance.now() - started;
}
