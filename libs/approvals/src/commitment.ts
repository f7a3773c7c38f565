import { createHash, createHmac, sign } from 'node:crypto';
import { type AgentKey, canonicalJson, cloneJson, type JsonValue } from '@gatehouse/contracts';

/**
 * What a reviewer sees is what runs. A request's `scope.argumentsHash` commits to the real
 * arguments of the call, and every fold checks that the arguments a reviewer is shown are the
 * ones it commits to:
 *
 *   argumentsHash = sha256(canonicalJson(view))
 *
 * where `view` is the shown arguments with the marker at each redacted pointer replaced by
 * `{ "$redacted": digest }`, and `digest` = HMAC-SHA256(salt, canonicalJson(removed value)).
 * The salt is secret to the requesting agent (derived from its private key, so a restarted agent
 * derives the same one and finds its approval again): readers of the topic cannot test guesses
 * of a short redacted value (a CVV) against the digest, while the agent cannot swap the value
 * after the fact, since the digest binds it. Without redactions `view` is the arguments, and the
 * hash is the plain sha-256 of their canonical JSON.
 */

/** What a redacted value reads as in the request a reviewer sees. */
export const REDACTION_MARKER = '[REDACTED]';

/** The key of the object that stands for a redacted value in the committed view. */
const DIGEST_FIELD = '$redacted';

type Container = JsonValue[] | { [key: string]: JsonValue };

const isContainer = (value: JsonValue | undefined): value is Container => value !== null && typeof value === 'object';
const unescape = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');

/** The segments of a concrete RFC 6901 pointer (`/a/0/b`); undefined when malformed or the root. */
function segmentsOf(pointer: string): string[] | undefined {
  if (!pointer.startsWith('/') || pointer.length < 2 || /~[^01]|~$/.test(pointer)) return undefined;
  return pointer.slice(1).split('/').map(unescape);
}

function child(node: Container, key: string): JsonValue | undefined {
  if (Array.isArray(node)) return /^(0|[1-9]\d*)$/.test(key) ? node[Number(key)] : undefined;
  return Object.prototype.hasOwnProperty.call(node, key) ? node[key] : undefined;
}

/** Replaces the value at `pointer` inside `root` (a copy the caller owns); false when it is not there. */
function replaceAt(root: JsonValue, pointer: string, replace: (value: JsonValue) => JsonValue | undefined): boolean {
  const segments = segmentsOf(pointer);
  if (!segments) return false;
  let node: JsonValue | undefined = root;
  for (const segment of segments.slice(0, -1)) node = isContainer(node) ? child(node, segment) : undefined;
  const last = segments[segments.length - 1] as string;
  if (!isContainer(node)) return false;
  const current = child(node, last);
  if (current === undefined) return false;
  const next = replace(current);
  if (next === undefined) return false;
  if (Array.isArray(node)) node[Number(last)] = next;
  else node[last] = next;
  return true;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The commitment of a shown view and its redaction digests; undefined when a digest names a
 * pointer that does not hold the marker in the view (the view and the digests disagree).
 */
export function commitmentOfView(view: JsonValue, redactionDigests: Readonly<Record<string, string>>): string | undefined {
  const committed = cloneJson(view);
  for (const [pointer, digest] of Object.entries(redactionDigests)) {
    const ok = replaceAt(committed, pointer, (value) => (value === REDACTION_MARKER ? { [DIGEST_FIELD]: digest } : undefined));
    if (!ok) return undefined;
  }
  return sha256(canonicalJson(committed));
}

/** What a requesting agent derives from the real arguments: the shown view, the digests and the commitment. */
export interface CommittedArguments {
  readonly view: JsonValue;
  readonly redactionDigests: Readonly<Record<string, string>>;
  readonly argumentsHash: string;
}

/** Where a call's redaction salt comes from: the agent's key and the call. */
export interface SaltScope {
  readonly tenant: string;
  readonly connectorId: string;
  readonly executionId: string;
  readonly toolCallId: string;
}

// Ed25519 signatures are deterministic (RFC 8032): the same key signs this label the same way
// after a restart, and no one without the key can compute it.
const secrets = new WeakMap<AgentKey, Buffer>();
function agentSecret(key: AgentKey): Buffer {
  let secret = secrets.get(key);
  if (!secret) {
    secret = createHash('sha256').update(sign(null, Buffer.from('gatehouse.redaction-salt.v1', 'utf8'), key.privateKey)).digest();
    secrets.set(key, secret);
  }
  return secret;
}

/**
 * Commits to `args` with the values at `redactedPaths` (concrete pointers, as `redactArguments`
 * reports them) redacted behind salted digests. Deterministic for one agent key and call.
 */
export function commitArguments(args: JsonValue, redactedPaths: readonly string[], key: AgentKey, scope: SaltScope): CommittedArguments {
  const salt = createHmac('sha256', agentSecret(key)).update(JSON.stringify([scope.tenant, scope.connectorId, scope.executionId, scope.toolCallId])).digest();
  const view = cloneJson(args);
  const digests: Record<string, string> = {};
  for (const pointer of redactedPaths) {
    replaceAt(view, pointer, (value) => {
      digests[pointer] = createHmac('sha256', salt).update(canonicalJson(value), 'utf8').digest('hex');
      return REDACTION_MARKER;
    });
  }
  const argumentsHash = commitmentOfView(view, digests);
  // The view was made from these digests: it always agrees with them.
  if (argumentsHash === undefined) throw new TypeError('commitArguments: redacted paths must be concrete pointers');
  return Object.freeze({ view, redactionDigests: Object.freeze(digests), argumentsHash });
}
