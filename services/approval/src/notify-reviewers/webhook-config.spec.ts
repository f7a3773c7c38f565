import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GatehouseError } from '@gatehouse/contracts';
import { parseInboxUrl, parseWebhookTargets, WEBHOOK_ENV, webhooksFromEnv } from './webhook-config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-webhook-config-'));
const SECRET = 's'.repeat(40);
const secretFile = path.join(dir, 'secret');
writeFileSync(secretFile, `${SECRET}\n`);
const shortFile = path.join(dir, 'short');
writeFileSync(shortFile, 'too-short');
// A Slack webhook URL is a credential: it must never appear in an error.
const SLACK_URL = 'https://hooks.slack.com/services/T000/B000/CANARYTOKEN';

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const entry = (overrides: Record<string, unknown> = {}) => ({ id: 'acme-slack', tenant: 'acme', url: SLACK_URL, format: 'slack', secretFile, ...overrides });

/** The CONFIG.INVALID error `run` throws, checked to name `variable` and to carry none of `secrets`. */
function refusal(run: () => unknown, variable: string = WEBHOOK_ENV.webhooks, secrets: readonly string[] = [SLACK_URL, SECRET]): GatehouseError {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(GatehouseError);
  const error = thrown as GatehouseError;
  expect(error.code).toBe('CONFIG.INVALID');
  expect(error.details['variable']).toBe(variable);
  expect(error.message.startsWith(variable)).toBe(true);
  const shown = JSON.stringify({ message: error.message, details: error.details });
  for (const secret of secrets) expect(shown).not.toContain(secret);
  return error;
}

describe('webhook targets', () => {
  it('reads a target with its secret from the file and its URL parsed', () => {
    const [target] = parseWebhookTargets(JSON.stringify([entry()]));
    expect(target).toMatchObject({ id: 'acme-slack', tenant: 'acme', format: 'slack' });
    expect(target?.url.href).toBe(SLACK_URL);
    expect(target?.secret.toString('utf8')).toBe(SECRET);
  });

  it('refuses a field it does not know, naming it', () => {
    expect(refusal(() => parseWebhookTargets(JSON.stringify([entry({ headers: { authorization: 'x' } })]))).message).toContain('headers');
  });

  it.each([
    ['an ftp URL', 'ftp://files.example.com/hook'],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['a file URL', 'file:///etc/passwd'],
    ['a relative URL', '/hooks/approval'],
    ['a URL with credentials', 'https://user:CANARYTOKEN@hooks.example.com/x'],
  ])('refuses %s without printing it', (_what, url) => {
    refusal(() => parseWebhookTargets(JSON.stringify([entry({ url })])), WEBHOOK_ENV.webhooks, [url, 'CANARYTOKEN']);
  });

  it('refuses a format other than json or slack', () => {
    refusal(() => parseWebhookTargets(JSON.stringify([entry({ format: 'teams' })])));
  });

  it('refuses the same target id twice', () => {
    expect(refusal(() => parseWebhookTargets(JSON.stringify([entry(), entry({ tenant: 'globex' })]))).message).toContain('twice');
  });

  it('refuses a secret file that cannot be read, or holds fewer than 32 bytes, naming the target', () => {
    expect(refusal(() => parseWebhookTargets(JSON.stringify([entry({ secretFile: path.join(dir, 'missing') })]))).details['target']).toBe('acme-slack');
    expect(refusal(() => parseWebhookTargets(JSON.stringify([entry({ secretFile: shortFile })])), WEBHOOK_ENV.webhooks, [SLACK_URL, 'too-short']).message).toContain('32 bytes');
  });

  it('refuses a tenant or id that is not a plain identifier', () => {
    refusal(() => parseWebhookTargets(JSON.stringify([entry({ tenant: 'acme <b>' })])));
    refusal(() => parseWebhookTargets(JSON.stringify([entry({ id: 'Acme Slack' })])));
  });

  it('refuses text that is not a JSON array, naming the variable it came from', () => {
    refusal(() => parseWebhookTargets(`[${SLACK_URL}`, WEBHOOK_ENV.webhooksFile), WEBHOOK_ENV.webhooksFile);
    refusal(() => parseWebhookTargets(JSON.stringify(entry())));
  });
});

describe('the inbox URL', () => {
  it('is the base of the deep links, without a trailing slash', () => {
    expect(parseInboxUrl('https://approvals.example.com/gatehouse/')).toBe('https://approvals.example.com/gatehouse');
  });

  it.each(['https://approvals.example.com/?tab=1', 'https://approvals.example.com/#x', 'ftp://approvals.example.com', 'approvals.example.com'])(
    'refuses %s',
    (url) => {
      refusal(() => parseInboxUrl(url), WEBHOOK_ENV.inboxUrl, [url]);
    },
  );
});

describe('webhooksFromEnv', () => {
  it('is undefined when no webhook is configured: nothing is ever sent', () => {
    expect(webhooksFromEnv({})).toBeUndefined();
    expect(webhooksFromEnv({ [WEBHOOK_ENV.webhooks]: '[]' })).toBeUndefined();
  });

  it('requires the inbox URL once a webhook is configured', () => {
    refusal(() => webhooksFromEnv({ [WEBHOOK_ENV.webhooks]: JSON.stringify([entry()]) }), WEBHOOK_ENV.inboxUrl);
  });

  it('reads the list from the file variable, which wins over the variable', () => {
    const file = path.join(dir, 'webhooks.json');
    writeFileSync(file, JSON.stringify([entry({ id: 'from-file' })]));
    const webhooks = webhooksFromEnv({
      [WEBHOOK_ENV.webhooks]: JSON.stringify([entry({ id: 'from-variable' })]),
      [WEBHOOK_ENV.webhooksFile]: file,
      [WEBHOOK_ENV.inboxUrl]: 'https://approvals.example.com',
    });
    expect(webhooks?.targets.map((t) => t.id)).toEqual(['from-file']);
    expect(webhooks?.inboxUrl).toBe('https://approvals.example.com');
  });

  it('refuses a file variable naming a file that cannot be read, naming that variable', () => {
    refusal(() => webhooksFromEnv({ [WEBHOOK_ENV.webhooksFile]: path.join(dir, 'missing.json') }), WEBHOOK_ENV.webhooksFile);
  });
});
