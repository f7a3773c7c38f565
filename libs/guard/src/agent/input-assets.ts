import { type MastraDBMessage } from '@mastra/core/memory';
import { type ProcessInputArgs, type ProcessInputStepArgs, type Processor } from '@mastra/core/processors';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { type Abort, recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';

/** The static reason a caller sees when an input asset URL is refused. */
export const INPUT_ASSET_DENIAL_REASON = 'Input asset URL is not allowed';

/** A refusal's code; `ASSET.UNRECOGNIZED_REFERENCE`: a message shape that could name a file this guard cannot read. */
export type AssetVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly code: 'ASSET.SCHEME_NOT_ALLOWED' | 'ASSET.CREDENTIALS_IN_URL' | 'ASSET.ORIGIN_NOT_ALLOWED' | 'ASSET.UNRECOGNIZED_REFERENCE' };

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

const ALLOWED: AssetVerdict = Object.freeze({ allowed: true });
// Something that can name a file but is not a shape this guard knows: it could carry a URL unread.
const UNRECOGNIZED: AssetVerdict = Object.freeze({ allowed: false, code: 'ASSET.UNRECOGNIZED_REFERENCE' });

// The fields of a stored message's content (MastraMessageContentV2); any other could be read by a
// later Mastra as a file.
const CONTENT_FIELDS: ReadonlySet<string> = new Set(['format', 'parts', 'experimental_attachments', 'content', 'toolInvocations', 'reasoning', 'annotations', 'metadata', 'providerMetadata']);
// Part types that name no file (text, traces, sources the model is not given as files, data parts).
const FILELESS_PARTS: ReadonlySet<string> = new Set(['text', 'reasoning', 'step-start', 'source', 'source-document', 'error']);
// Tool output types whose value is text or JSON the model reads, never a file.
const FILELESS_OUTPUTS: ReadonlySet<string> = new Set(['text', 'json', 'error-text', 'error-json', 'execution-denied']);

type Bag = Readonly<Record<string, unknown>>;
const isBag = (value: unknown): value is Bag => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A reference that must be a URL or inline data: absent or not a string is unrecognised. */
function judgeUrlField(value: unknown, origins: ReadonlySet<string>): AssetVerdict {
  return typeof value === 'string' || value instanceof URL ? judgeAssetReference(value, origins) : UNRECOGNIZED;
}

function firstOf(values: Iterable<unknown>, judge: (value: unknown) => AssetVerdict): AssetVerdict {
  for (const value of values) {
    const verdict = judge(value);
    if (!verdict.allowed) return verdict;
  }
  return ALLOWED;
}

/**
 * A tool result's model output (`providerMetadata.mastra.modelOutput`, what a tool's `toModelOutput`
 * made): Mastra fetches a `content` item's `image-url`/`file-url` and hands it to the model as a file.
 */
function judgeModelOutput(output: unknown, origins: ReadonlySet<string>): AssetVerdict {
  if (output === undefined || output === null) return ALLOWED;
  if (!isBag(output) || typeof output['type'] !== 'string') return UNRECOGNIZED;
  if (FILELESS_OUTPUTS.has(output['type'])) return ALLOWED;
  if (output['type'] !== 'content' || !Array.isArray(output['value'])) return UNRECOGNIZED;
  return firstOf(output['value'], (item) => {
    if (!isBag(item)) return UNRECOGNIZED;
    switch (item['type']) {
      case 'text':
      case 'file-id':
      case 'image-file-id':
        return ALLOWED;
      case 'image-url':
      case 'file-url':
        return judgeUrlField(item['url'], origins);
      case 'media':
      case 'image-data':
      case 'file-data':
        return judgeUrlField(item['data'], origins);
      default:
        return UNRECOGNIZED;
    }
  });
}

/** An MCP-style tool result (`{ content: [{ type: 'image', data }] }`): Mastra gives its data to the model as a file. */
function judgeMcpResult(result: unknown, origins: ReadonlySet<string>): AssetVerdict {
  if (!isBag(result) || !Array.isArray(result['content'])) return ALLOWED;
  return firstOf(result['content'], (item) => (isBag(item) && (item['type'] === 'image' || item['type'] === 'audio') ? judgeAssetReference(item['data'], origins) : ALLOWED));
}

function judgeToolInvocation(invocation: unknown, origins: ReadonlySet<string>): AssetVerdict {
  return isBag(invocation) ? judgeMcpResult(invocation['result'], origins) : UNRECOGNIZED;
}

function judgePart(part: unknown, origins: ReadonlySet<string>): AssetVerdict {
  if (!isBag(part) || typeof part['type'] !== 'string') return UNRECOGNIZED;
  const type = part['type'];
  if (type === 'file' || type === 'image') return firstOf([part['data'], part['url'], part['image']], (value) => judgeAssetReference(value, origins));
  if (type === 'tool-invocation') {
    const metadata = part['providerMetadata'];
    const mastra = isBag(metadata) ? metadata['mastra'] : undefined;
    const stored = judgeModelOutput(isBag(mastra) ? mastra['modelOutput'] : undefined, origins);
    return stored.allowed ? judgeToolInvocation(part['toolInvocation'], origins) : stored;
  }
  if (FILELESS_PARTS.has(type) || (type.startsWith('data-') && type.length > 'data-'.length)) return ALLOWED;
  return UNRECOGNIZED;
}

/**
 * Every place a stored message can name a file the model is given: file and image parts, the
 * content's `experimental_attachments` (Mastra makes them file parts), a tool result's stored model
 * output and MCP-style content (its own `toolInvocations` too). Anything else is refused.
 */
function judgeMessage(message: unknown, origins: ReadonlySet<string>): AssetVerdict {
  const content = isBag(message) ? message['content'] : undefined;
  if (typeof content === 'string') return ALLOWED;
  if (!isBag(content) || Object.keys(content).some((key) => !CONTENT_FIELDS.has(key))) return UNRECOGNIZED;
  const { parts, experimental_attachments: attachments, toolInvocations } = content;
  for (const [list, judge] of [
    [parts, (part: unknown) => judgePart(part, origins)],
    [attachments, (attachment: unknown) => (isBag(attachment) ? judgeUrlField(attachment['url'], origins) : UNRECOGNIZED)],
    [toolInvocations, (invocation: unknown) => judgeToolInvocation(invocation, origins)],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) return UNRECOGNIZED;
    const verdict = firstOf(list, judge);
    if (!verdict.allowed) return verdict;
  }
  return ALLOWED;
}

function firstRefusal(messages: readonly MastraDBMessage[], origins: ReadonlySet<string>): AssetVerdict {
  return firstOf(messages, (message) => judgeMessage(message, origins));
}

/**
 * Input processor that refuses file and image references (parts, attachments, tool results' model
 * output) naming network URLs outside the allowed origins, and message shapes it cannot read, on the call's input and again before every model step (so assets a
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
      verdict = UNRECOGNIZED;
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
