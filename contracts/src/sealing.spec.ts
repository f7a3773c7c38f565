import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { agentKeyFromPem, checkClaim, signClaim } from './claims.js';
import { createContentKeys, contentKeysFromEnv, newContentKeyEntry, openContent, sealContent, sealingKeyFor } from './sealing.js';
import { createKeyring, signEvent, signingKeyFromPem, trustedEntryOf } from './signing.js';

const acme = newContentKeyEntry('acme', 'content-acme-1');
const keys = createContentKeys([acme, newContentKeyEntry('globex', 'content-globex-1')]);
const binding = { type: 'ApprovalRequested', approvalId: 'appr_1', tenant: 'acme' };

describe('sealed content', () => {
  it('opens what it sealed, with the same binding', () => {
    const sealed = sealContent({ arguments: { card: '4242' } }, sealingKeyFor(keys, 'acme')!, binding);
    expect(JSON.stringify(sealed)).not.toContain('4242');
    expect(openContent(sealed, keys, binding)).toEqual({ ok: true, value: { arguments: { card: '4242' } } });
  });

  it('refuses a box moved to another approval or tenant, one altered, and one whose key the reader lacks', () => {
    const sealed = sealContent({ a: 1 }, sealingKeyFor(keys, 'acme')!, binding);
    expect(openContent(sealed, keys, { ...binding, approvalId: 'appr_2' })).toEqual({ ok: false, reason: 'tampered' });
    expect(openContent(sealed, keys, { ...binding, tenant: 'globex' })).toEqual({ ok: false, reason: 'wrong-tenant' });
    const flipped = `${sealed.data.startsWith('A') ? 'B' : 'A'}${sealed.data.slice(1)}`;
    expect(openContent({ ...sealed, data: flipped }, keys, binding)).toEqual({ ok: false, reason: 'tampered' });
    expect(openContent(sealed, createContentKeys([newContentKeyEntry('globex')]), binding)).toEqual({ ok: false, reason: 'no-key' });
  });

  it('seals with the newest key of a tenant during a rotation and still opens the older one', () => {
    const old = sealContent({ n: 1 }, sealingKeyFor(createContentKeys([acme]), 'acme')!, binding);
    const rotated = createContentKeys([acme, newContentKeyEntry('acme', 'content-acme-2')]);
    expect(sealingKeyFor(rotated, 'acme')?.keyId).toBe('content-acme-2');
    expect(openContent(old, rotated, binding)).toEqual({ ok: true, value: { n: 1 } });
  });

  it('reads keys from the environment and never echoes one in an error', () => {
    expect(contentKeysFromEnv({ GATEHOUSE_CONTENT_KEYS: JSON.stringify([acme]) }).get('content-acme-1')?.tenant).toBe('acme');
    expect(contentKeysFromEnv({}).size).toBe(0);
    const bad = { ...acme, key: `${acme.key.slice(0, 20)}!` };
    expect(() => contentKeysFromEnv({ GATEHOUSE_CONTENT_KEYS: JSON.stringify([bad]) })).toThrow(/content key 0 is malformed/);
    try {
      contentKeysFromEnv({ GATEHOUSE_CONTENT_KEYS: JSON.stringify([bad]) });
    } catch (error) {
      expect(String(error) + JSON.stringify(error)).not.toContain(acme.key.slice(0, 20));
    }
    expect(() => contentKeysFromEnv({ GATEHOUSE_CONTENT_KEYS: '{' })).toThrow(/JSON array/);
  });
});

describe('claims', () => {
  const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const agent = agentKeyFromPem('agent-1', { id: 'agent:billing', tenants: ['acme'] }, pem());
  const service = signingKeyFromPem('approval-1', 'approval', pem());
  const ledger = signingKeyFromPem('ledger-1', 'ledger', pem());
  const keyring = createKeyring([trustedEntryOf(agent), trustedEntryOf(service), trustedEntryOf(ledger)]);
  const event = { id: 'e1', type: 'ApprovalCancelled', tenant: 'acme', payload: { approvalId: 'appr_1' } };

  it('attributes a claim to the agent its key is bound to, in its own tenant only, or to the approval service', () => {
    expect(checkClaim(signClaim(event, agent), keyring)).toEqual({ attributed: true, author: { kind: 'agent', agentId: 'agent:billing', keyId: 'agent-1' } });
    expect(checkClaim(signClaim({ ...event, tenant: 'globex' }, agent), keyring)).toEqual({ attributed: false, reason: 'foreign-tenant' });
    expect(checkClaim(signEvent(event, service), keyring)).toEqual({ attributed: true, author: { kind: 'service', signer: 'approval', keyId: 'approval-1' } });
  });

  it('attributes nothing unsigned, altered, or signed by another service', () => {
    expect(checkClaim(event, keyring)).toEqual({ attributed: false, reason: 'unsigned' });
    const altered = { ...signClaim(event, agent), payload: { approvalId: 'appr_2' } };
    expect(checkClaim(altered, keyring)).toEqual({ attributed: false, reason: 'bad-signature' });
    expect(checkClaim(signEvent(event, ledger), keyring)).toEqual({ attributed: false, reason: 'wrong-signer' });
  });

  it('binds an agent key to an id and tenants, and a trusted entry to both', () => {
    expect(() => agentKeyFromPem('agent-2', { id: '', tenants: ['acme'] }, pem())).toThrow(/bound to an id/);
    expect(() => agentKeyFromPem('agent-2', { id: 'a', tenants: [] }, pem())).toThrow(/bound to an id/);
    expect(() => createKeyring([{ ...trustedEntryOf(agent), agent: undefined }])).toThrow(/trusted key 0 is malformed/);
    expect(() => createKeyring([{ ...trustedEntryOf(service), agent: { id: 'x', tenants: ['acme'] } }])).toThrow(/trusted key 0 is malformed/);
  });
});
