import { describe, expect, it } from '@jest/globals';
import { signingEnv, TEST_KEYS } from '@gatehouse/contracts/testing';
import { LEDGER_ENV, ledgerOptionsFromEnv, parseOperatorTokens } from '../ledger-config.js';
import { authenticateOperator } from './operator-auth.js';

const TOKEN_A = 'a-very-long-operator-token-1';
const TOKEN_B = 'b:token:with:colons-inside-2';

describe('operator tokens', () => {
  const operators = parseOperatorTokens(`alice:operator:${TOKEN_A}, bob:sre:${TOKEN_B}`);

  it('recognises each configured token and names its operator', () => {
    expect(authenticateOperator(`Bearer ${TOKEN_A}`, operators)).toEqual({ id: 'alice', role: 'operator' });
    expect(authenticateOperator(`bearer ${TOKEN_B}`, operators)).toEqual({ id: 'bob', role: 'sre' });
  });

  it('refuses a missing, malformed or unknown token with LEDGER.UNAUTHORIZED', () => {
    for (const header of [undefined, '', TOKEN_A, `Basic ${TOKEN_A}`, `Bearer ${TOKEN_A} extra`, `Bearer ${TOKEN_A}x`, 'Bearer a']) {
      expect(() => authenticateOperator(header, operators)).toThrow(expect.objectContaining({ code: 'LEDGER.UNAUTHORIZED' }));
    }
  });

  it('refuses everything when no operator is configured', () => {
    expect(parseOperatorTokens(undefined)).toEqual([]);
    expect(parseOperatorTokens('  ')).toEqual([]);
    expect(() => authenticateOperator(`Bearer ${TOKEN_A}`, [])).toThrow(expect.objectContaining({ code: 'LEDGER.UNAUTHORIZED' }));
  });

  it('keeps only token digests', () => {
    expect(JSON.stringify(operators)).not.toContain(TOKEN_A);
  });

  it('rejects a malformed configuration by naming the variable and the entry, never the token', () => {
    for (const raw of ['alice:operator', `alice::${TOKEN_A}`, 'alice:operator:short', `ok:operator:${TOKEN_A},broken`]) {
      let message = '';
      try {
        parseOperatorTokens(raw);
      } catch (error) {
        expect(error).toMatchObject({ code: 'CONFIG.INVALID', details: { variable: LEDGER_ENV.operatorTokens } });
        message = (error as Error).message;
      }
      expect(message).toContain(LEDGER_ENV.operatorTokens);
      expect(message).not.toContain(TOKEN_A);
      expect(message).not.toContain('short');
    }
  });

  it('reads the decision deadline from the environment', () => {
    const keys = signingEnv(TEST_KEYS.ledger);
    try {
      expect(ledgerOptionsFromEnv(keys.env).decisionDeadlineMs).toBe(5_000);
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.decisionDeadlineMs]: '250' }).decisionDeadlineMs).toBe(250);
      expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.decisionDeadlineMs]: 'soon' })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID' }));
      // No signing key, or no trusted keys: the ledger refuses to start rather than write grants nobody trusts.
      expect(() => ledgerOptionsFromEnv({})).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID', details: { variable: 'GATEHOUSE_SIGNING_KEY_FILE' } }));
      expect(() => ledgerOptionsFromEnv({ ...keys.env, GATEHOUSE_TRUSTED_KEYS: '' })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID' }));
      expect(ledgerOptionsFromEnv(keys.env).signingKey.keyId).toBe(TEST_KEYS.ledger.keyId);
      // Retention: none unless configured; at least a second; the sweep interval bounded.
      expect(ledgerOptionsFromEnv(keys.env).retainCompletedMs).toBeUndefined();
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.retainCompletedMs]: '86400000' })).toMatchObject({ retainCompletedMs: 86_400_000, expirySweepMs: 60_000 });
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.retainCompletedMs]: '86400000', [LEDGER_ENV.expirySweepMs]: '5000' }).expirySweepMs).toBe(5_000);
      for (const bad of ['999', '1.5', 'a day', '-1']) {
        expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.retainCompletedMs]: bad })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID', details: { variable: LEDGER_ENV.retainCompletedMs } }));
      }
      expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.retainCompletedMs]: '86400000', [LEDGER_ENV.expirySweepMs]: '10' })).toThrow(expect.objectContaining({ details: { variable: LEDGER_ENV.expirySweepMs } }));
      // Checkpoints into the log: hourly unless configured, 0 for none, otherwise a second to a week.
      expect(ledgerOptionsFromEnv(keys.env).checkpointIntervalMs).toBe(3_600_000);
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.checkpointIntervalMs]: '0' }).checkpointIntervalMs).toBe(0);
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.checkpointIntervalMs]: '600000' }).checkpointIntervalMs).toBe(600_000);
      for (const bad of ['999', '604800001', '1.5', 'hourly', '-1']) {
        expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.checkpointIntervalMs]: bad })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID', details: { variable: LEDGER_ENV.checkpointIntervalMs } }));
      }
      // A signing key the service's own keyring does not trust would make every grant it writes void.
      const untrusted = signingEnv(TEST_KEYS.ledger, [TEST_KEYS.approval]);
      try {
        expect(() => ledgerOptionsFromEnv(untrusted.env)).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID', details: { variable: 'GATEHOUSE_TRUSTED_KEYS_FILE' } }));
      } finally {
        untrusted.remove();
      }
    } finally {
      keys.remove();
    }
  });
});
