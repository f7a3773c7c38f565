import { readFileSync } from 'node:fs';
import { GatehouseError } from '@gatehouse/contracts';
import { parsePrincipalList, principalListText } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { PLAIN_NAME } from './reviewer-notification.js';

/** Environment variables of the reviewer webhooks. */
export const WEBHOOK_ENV = {
  /** JSON array `[{ id, tenant, url, format, secretFile }]`: where each tenant's notifications go. */
  webhooks: 'GATEHOUSE_APPROVAL_WEBHOOKS',
  /** A file holding the same JSON (mounted secrets); wins over the variable. */
  webhooksFile: 'GATEHOUSE_APPROVAL_WEBHOOKS_FILE',
  /** The inbox as reviewers reach it (`https://approvals.example.com`): links are `<it>/inbox#approval=<id>`. */
  inboxUrl: 'GATEHOUSE_APPROVAL_INBOX_URL',
} as const;

/** The body a target receives: generic JSON, or a Slack-compatible message (`text` and `blocks`). */
export type WebhookFormat = 'json' | 'slack';

/** One configured receiver of one tenant's notifications. */
export interface WebhookTarget {
  /** Names the target in the delivery table, logs and errors (its URL may hold a token: it never does). */
  readonly id: string;
  readonly tenant: string;
  readonly url: URL;
  readonly format: WebhookFormat;
  /** The HMAC-SHA256 key of the signature header, read from `secretFile`. */
  readonly secret: Buffer;
}

/** The reviewer webhooks as configured: the targets and the base of the inbox deep links. */
export interface ReviewerWebhooks {
  readonly targets: readonly WebhookTarget[];
  /** Without a trailing slash. */
  readonly inboxUrl: string;
}

/** The least HMAC key length, bytes: the hash's own output size. */
export const MIN_SECRET_BYTES = 32;

const httpUrl = (text: string): URL | undefined => {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
};

// Messages name the rule, never the value: a Slack webhook URL is itself a credential.
const TargetSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be 1-64 of a-z, 0-9, ".", "_", "-"'),
  tenant: z.string().regex(PLAIN_NAME, 'must be a plain identifier (letters, digits and . _ : @ / -; at most 128)'),
  url: z
    .string()
    .max(2048)
    .refine((text) => httpUrl(text) !== undefined, 'must be an absolute http(s) URL')
    .refine((text) => !httpUrl(text)?.username && !httpUrl(text)?.password, 'must not carry credentials (use secretFile)'),
  format: z.enum(['json', 'slack']),
  secretFile: z.string().min(1).max(4096),
});

function invalid(variable: string, expectation: string, details: Record<string, string> = {}): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable, ...details } });
}

/** Reads a target's secret; an unreadable or short file is CONFIG.INVALID naming the variable and the target. */
function readSecret(file: string, variable: string, target: string): Buffer {
  let secret: Buffer;
  try {
    secret = Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
  } catch {
    throw invalid(variable, `target "${target}" names a secretFile that cannot be read`, { target });
  }
  if (secret.length < MIN_SECRET_BYTES) {
    throw invalid(variable, `target "${target}" needs a secret of at least ${MIN_SECRET_BYTES} bytes`, { target });
  }
  return secret;
}

/** Parses the target list (`variable` names where it came from); unknown fields, bad URLs and repeated ids are refused. */
export function parseWebhookTargets(json: string | undefined, variable: string = WEBHOOK_ENV.webhooks): WebhookTarget[] {
  const entries = parsePrincipalList(json, variable, 'webhook', TargetSchema);
  const ids = new Set<string>();
  return entries.map((entry) => {
    if (ids.has(entry.id)) throw invalid(variable, `lists target "${entry.id}" twice`, { target: entry.id });
    ids.add(entry.id);
    const url = httpUrl(entry.url) as URL;
    const secret = readSecret(entry.secretFile, variable, entry.id);
    return { id: entry.id, tenant: entry.tenant, url, format: entry.format, secret };
  });
}

/** The inbox base URL: absolute http(s), no query or fragment (the link appends `/inbox#approval=<id>`). */
export function parseInboxUrl(text: string | undefined, variable: string = WEBHOOK_ENV.inboxUrl): string {
  if (text === undefined || text.trim() === '') throw invalid(variable, 'is required when webhooks are configured (the deep link into the inbox)');
  const url = httpUrl(text.trim());
  if (!url || url.username || url.password || url.search || url.hash) throw invalid(variable, 'must be an absolute http(s) URL without credentials, query or fragment');
  return url.toString().replace(/\/+$/, '');
}

/** Reads the webhook settings; none configured: undefined (nothing is ever sent). */
export function webhooksFromEnv(env: NodeJS.ProcessEnv = process.env): ReviewerWebhooks | undefined {
  const list = principalListText(env, WEBHOOK_ENV.webhooks, WEBHOOK_ENV.webhooksFile);
  const targets = parseWebhookTargets(list.text, list.from);
  if (targets.length === 0) return undefined;
  return { targets, inboxUrl: parseInboxUrl(env[WEBHOOK_ENV.inboxUrl]) };
}
