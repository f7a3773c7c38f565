import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { bearerCredential, findByApiKey } from '@gatehouse/service-runtime';
import { allowed, type ApprovalOptions, type ReviewerGrant } from '../approval-config.js';
import { ApprovalError } from '../errors.js';

/** An authenticated reviewer: who they are, and the tenants and connectors they may decide for. */
export interface Reviewer extends ReviewerGrant {
  readonly via: 'api-key' | 'jwt';
}

const JwtClaims = z.object({
  sub: z.string().min(1).max(256),
  role: z.string().min(1).max(128),
  exp: z.number().int(),
  nbf: z.number().int().optional(),
  iss: z.string().optional(),
  aud: z.union([z.string(), z.array(z.string())]).optional(),
  tenants: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)]),
  connectors: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)]),
});

const unauthenticated = () => new ApprovalError('APPROVAL.UNAUTHENTICATED');

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Verifies an HS256 JWT: the header must name HS256 (no `none`, no other algorithm), the
 * signature must match in constant time, `exp` must be in the future and `nbf` past, and
 * `iss`/`aud` must match when configured. Any failure is the same 401.
 */
function verifyJwt(token: string, jwt: NonNullable<ApprovalOptions['jwt']>, now: number): Reviewer {
  const [header, payload, signature, extra] = token.split('.');
  if (!header || !payload || !signature || extra !== undefined) throw unauthenticated();
  const head = decodeJson(header) as { alg?: unknown; typ?: unknown } | undefined;
  if (head?.alg !== 'HS256') throw unauthenticated();
  const expected = createHmac('sha256', jwt.secret).update(`${header}.${payload}`).digest();
  const presented = Buffer.from(signature, 'base64url');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) throw unauthenticated();
  const claims = JwtClaims.safeParse(decodeJson(payload));
  if (!claims.success) throw unauthenticated();
  const c = claims.data;
  const seconds = Math.floor(now / 1000);
  if (c.exp <= seconds || (c.nbf !== undefined && c.nbf > seconds)) throw unauthenticated();
  if (jwt.issuer !== undefined && c.iss !== jwt.issuer) throw unauthenticated();
  if (jwt.audience !== undefined && !(Array.isArray(c.aud) ? c.aud.includes(jwt.audience) : c.aud === jwt.audience)) throw unauthenticated();
  return { id: c.sub, role: c.role, tenants: allowed(c.tenants), connectors: allowed(c.connectors), via: 'jwt' };
}

/**
 * Authenticates `Authorization: Bearer <credential>`: a JWT when it has the shape of one and
 * JWTs are configured, otherwise an API key, compared by digest in constant time against every
 * configured reviewer. There is no anonymous access: anything else is APPROVAL.UNAUTHENTICATED.
 */
export function authenticateReviewer(authorization: string | undefined, options: Pick<ApprovalOptions, 'reviewers' | 'jwt'>, now = Date.now()): Reviewer {
  const credential = bearerCredential(authorization);
  if (!credential) throw unauthenticated();
  if (options.jwt && credential.split('.').length === 3) return verifyJwt(credential, options.jwt, now);
  const found = findByApiKey(credential, options.reviewers);
  if (!found) throw unauthenticated();
  return { id: found.id, role: found.role, tenants: found.tenants, connectors: found.connectors, via: 'api-key' };
}
