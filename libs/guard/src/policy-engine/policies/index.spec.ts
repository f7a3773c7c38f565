import { describe, expect, it } from '@jest/globals';
import * as policies from './index.js';

describe('content policies entry point', () => {
  it('exports the four factories and the detector id list, and nothing else at runtime', () => {
    expect(Object.keys(policies).sort()).toEqual([
      'PII_SECRETS_DETECTOR_IDS',
      'classifierPolicy',
      'denyPatterns',
      'maxTextLength',
      'piiSecrets',
    ]);
  });

  it('builds a frozen evaluator from every factory', () => {
    const built = [
      policies.denyPatterns(['x']),
      policies.maxTextLength(10),
      policies.piiSecrets(),
      policies.classifierPolicy({ classify: () => true }),
    ];
    for (const evaluator of built) {
      expect(Object.isFrozen(evaluator)).toBe(true);
      expect(Object.isFrozen(evaluator.phases)).toBe(true);
      expect(Object.isFrozen(evaluator.channels)).toBe(true);
      expect(typeof evaluator.evaluate).toBe('function');
    }
    expect(built.map((evaluator) => evaluator.name)).toEqual([
      'deny-patterns',
      'max-text-length',
      'pii-secrets',
      'classifier',
    ]);
  });
});
