import { describe, expect, it } from '@jest/globals';
import { readCleanCorpus } from '../../bench/corpus/clean-corpus.js';
import { dirtySamples } from '../../bench/corpus/dirty-set.js';
import { judge } from './judge.testing.js';
import { PII_SECRETS_DETECTOR_IDS, piiSecrets } from './pii-secrets.js';

const files = readCleanCorpus();
const samples = dirtySamples();

describe('piiSecrets on the clean corpus (src/bench/corpus/clean)', () => {
  it('has a realistic corpus to judge: 40 files or more, a few hundred KB', () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files.reduce((sum, file) => sum + file.text.length, 0)).toBeGreaterThan(200_000);
  });

  it.each(files.map((file) => [file.path, file.text] as const))('allows %s whole, with every detector', async (_path, text) => {
    expect(await judge(piiSecrets(), text)).toEqual({ allowed: true });
  });
});

describe('piiSecrets on the dirty set (src/bench/corpus/dirty-set.ts)', () => {
  it('has positives for every detector', () => {
    for (const id of PII_SECRETS_DETECTOR_IDS) expect(samples.filter((s) => s.detector === id).length).toBeGreaterThanOrEqual(10);
  });

  it.each(PII_SECRETS_DETECTOR_IDS)('%s detects every one of its positives', async (id) => {
    const policy = piiSecrets({ detectors: [id] });
    const missed: string[] = [];
    for (const { detector, text } of samples) {
      if (detector === id && (await judge(policy, text)).allowed) missed.push(text);
    }
    expect(missed).toEqual([]);
  });
});
