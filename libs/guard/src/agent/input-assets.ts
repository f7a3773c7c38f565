import { type MastraDBMessage } from '@mastra/core/memory';
import { type ProcessInputArgs, type ProcessInputStepArgs, type Processor } from '@mastra/core/processors';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { type Abort, recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';

/** The static reason a caller sees when an input asset URL is refused. */
export const INPUT_ASSET_DENIAL_REASON = 'Input asset URL is not allowed';

export type AssetVerdict = { readonly allowed: true } | { readonly allowed: false; readonly code: 'ASSET.SCHEME_NOT_ALLOWED' | 'ASSET.CREDENTIALS_IN_URL' | 'ASSET.ORIGIN_NOT_ALLOWED' };

/** Normalizes `https://Host:443/` style entries to URL origins; throws a TypeError on anything else. */
export function normalizeAssetOrigins(origins: readonly string[] | undefined, where: string): ReadonlySet<string> {
  if (origins === undefined) return new Set();
  if (!Array.isArray(origins)) throw new TypeError(`${where}: allowedInputAssetOrigins must be an array of http(s) origins`);
  return new Set(
    origins.map((entry) => {
      let url: URL;
      try {
        url = new URL(entry);
      } catch {
        throw new TypeError(`${where}: allowedInputAssetOrigins entries must be http(s) origins`);
      }
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
        throw new TypeError(`${where}: allowedInputAssetOrigins entries must be bare http(s) origins`);
      }
      return url.origin;
    }),
  );
}

/**
 * Judges one file/image reference: inline data (`data:` URLs, base64) is allowed; a network
 * URL only over http(s), without credentials, from a listed origin.
 */
export function judgeAssetReference(value: unknown, origins: ReadonlySet<string>): AssetVerdict {
  const raw = value instanceof URL ? value.href : typeof value === 'string' ? value.trim() : undefined;
  if (raw === undefined) return { allowed: true }; // binary data is inline
  if (/^data:/i.test(raw)) {
    // Mastra wraps a string it does not take for a URL (ftp:, file:, javascript:) into a
    // base64 data URL as is: a "base64" payload that is not base64 hides another scheme.
    const comma = raw.indexOf(',');
    const header = comma < 0 ? raw : raw.slice(0, comma);
    const payload = comma < 0 ? '' : raw.slice(comma + 1).replace(/\s+/g, '');
    if (/;base64$/i.test(header) && !/^[A-Za-z0-9+/_-]*={0,2}$/.test(payload)) return { allowed: false, code: 'ASSET.SCHEME_NOT_ALLOWED' };
    return { allowed: true };
  }
  if (!/^[a-z][a-z0-9+.-]*:/i.test(raw)) return { allowed: true }; // base64 payload, no scheme
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { allowed: false, code: 'ASSET.SCHEME_NOT_ALLOWED' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { allowed: false, code: 'ASSET.SCHEME_NOT_ALLOWED' };
  if (url.username || url.password) return { allowed: false, code: 'ASSET.CREDENTIALS_IN_URL' };
  if (!origins.has(url.origin)) return { allowed: false, code: 'ASSET.ORIGIN_NOT_ALLOWED' };
  return { allowed: true };
}

function firstRefusal(messages: readonly MastraDBMessage[], origins: ReadonlySet<string>): AssetVerdict {
  for (const message of messages) {
    const parts = (message.content as { parts?: { type?: unknown; data?: unknown; url?: unknown; image?: unknown }[] }).parts ?? [];
    for (const part of parts) {
      if (part.type !== 'file' && part.type !== 'image') continue;
      for (const value of [part.data, part.url, part.image]) {
        const verdict = judgeAssetReference(value, origins);
        if (!verdict.allowed) return verdict;
      }
    }
  }
  return { allowed: true };
}

/**
 * Input processor that refuses file and image parts naming network URLs outside the
 * allowed origins, on the call's input and again before every model step (so assets a
 * step adds are checked before Mastra downloads them). The URL never reaches the audit.
 */
export class InputAssetGuard implements Processor<'gatehouse-input-assets'> {
  readonly id = 'gatehouse-input-assets' as const;
  readonly name = 'gatehouse input asset origins';

  constructor(
    private readonly origins: ReadonlySet<string>,
    private readonly audit: AuditLogger | undefined,
    private readonly resource: string,
  ) {}

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    await this.check(args.messages, args.requestContext, args.abort);
    return args.messages;
  }

  async processInputStep(args: ProcessInputStepArgs): Promise<undefined> {
    await this.check(args.messages, args.requestContext, args.abort);
    return undefined;
  }

  private async check(messages: readonly MastraDBMessage[], requestContext: unknown, abort: Abort): Promise<void> {
    let verdict: AssetVerdict;
    try {
      verdict = firstRefusal(messages, this.origins);
    } catch {
      verdict = { allowed: false, code: 'ASSET.SCHEME_NOT_ALLOWED' };
    }
    if (verdict.allowed) return;
    const actor = actorFromRequestContext(requestContext);
    await recordGateDecision(this.audit, {
      boundary: 'input',
      action: 'agent.input.asset',
      resource: this.resource,
      decision: 'denied',
      code: verdict.code,
      reason: INPUT_ASSET_DENIAL_REASON,
      context: auditContextFromRequestContext(requestContext),
      ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
    });
    abort(INPUT_ASSET_DENIAL_REASON, { metadata: { code: verdict.code } });
  }
}
