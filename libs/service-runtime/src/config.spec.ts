import { describe, expect, it } from '@jest/globals';
import { serviceConfigFromEnv } from './config.js';
import { SERVICES } from './services.js';

const ledger = SERVICES['idempotency-ledger'];
const config = (env: Record<string, string>) => serviceConfigFromEnv(ledger, { GATEHOUSE_PORT: '4103', ...env });

describe('scale-out settings', () => {
  it('runs one replica over every partition unless GATEHOUSE_SCALE_OUT=partitions', () => {
    expect(config({}).scaleOut).toBeUndefined();
    expect(config({ GATEHOUSE_SCALE_OUT: 'none' }).scaleOut).toBeUndefined();
    expect(config({ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: 'ledger-1' }).scaleOut).toEqual({ replicaId: 'ledger-1', url: 'http://127.0.0.1:4103' });
  });

  it('takes the advertised URL other replicas forward to, without a trailing slash', () => {
    expect(config({ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: 'a', GATEHOUSE_ADVERTISED_URL: 'https://ledger-1.internal:8443/' }).scaleOut?.url).toBe('https://ledger-1.internal:8443');
  });

  it('refuses a mode, URL or replica name it cannot use, naming the variable and never its value', () => {
    const refusals: [Record<string, string>, string][] = [
      [{ GATEHOUSE_SCALE_OUT: 'yes' }, 'GATEHOUSE_SCALE_OUT'],
      [{ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_ADVERTISED_URL: 'not a url' }, 'GATEHOUSE_ADVERTISED_URL'],
      [{ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_ADVERTISED_URL: 'file:///etc/passwd' }, 'GATEHOUSE_ADVERTISED_URL'],
      [{ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_ADVERTISED_URL: 'http://evil.example/?to=x' }, 'GATEHOUSE_ADVERTISED_URL'],
      [{ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: 'a b' }, 'GATEHOUSE_REPLICA_ID'],
      [{ GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: 'x'.repeat(129) }, 'GATEHOUSE_REPLICA_ID'],
    ];
    for (const [env, variable] of refusals) {
      let thrown: { code?: string; message?: string; details?: unknown } = {};
      try {
        config(env);
      } catch (error) {
        thrown = error as typeof thrown;
      }
      expect({ code: thrown.code, details: thrown.details }).toEqual({ code: 'CONFIG.INVALID', details: { variable } });
      for (const value of Object.values(env)) if (value !== 'partitions') expect(thrown.message).not.toContain(value);
    }
  });
});
