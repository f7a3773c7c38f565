import * as crypto from 'node:crypto';

/**
 * Hex sha-256 of `text` (as UTF-8). Node's one-shot `crypto.hash` (20.12+, 21.7+) gives the same
 * digest without building a Hash object per call, a few hundred nanoseconds a call on the gate's
 * path (argument hash, grant digest, storage keys); older runtimes take `createHash`.
 */
export const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => crypto.createHash('sha256').update(text).digest('hex');
