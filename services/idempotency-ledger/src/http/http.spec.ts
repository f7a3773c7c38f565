import { describe, expect, it } from '@jest/globals';
import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { ContractError, GatehouseError } from '@gatehouse/contracts';
import { CompleteKeyRequest } from '../complete-key/complete-key.js';
import { ConsumeRateRequest } from '../consume-rate/consume-rate.js';
import { codeForRejection, type LedgerCode, LedgerError } from '../errors.js';
import { FailKeyRequest } from '../fail-key/fail-key.js';
import { ReconcileKeyRequest } from '../reconcile-key/reconcile-key.js';
import { ReserveKeyRequest } from '../reserve-key/reserve-key.js';
import { ResolveKeyRequest } from '../resolve-key/resolve-key.js';
import { errorResponse, STATUS_BY_CODE } from './ledger-exception.filter.js';
import { parseRequest } from './parse-request.js';

const KEY = 'a'.repeat(64);
const LEASE = '3f1c2a7e-8b9d-4c1e-9f2a-1b2c3d4e5f60';
const SECRET = 'sk-live-4f9a-never-echo-me';

function invalid(schema: Parameters<typeof parseRequest>[0], body: unknown): { fields: string[]; json: string } {
  try {
    parseRequest(schema, body);
  } catch (error) {
    expect(error).toBeInstanceOf(LedgerError);
    const { status, body: answer } = errorResponse(error);
    expect(status).toBe(400);
    const details = answer.details as { fields: { field: string }[] };
    return { fields: details.fields.map((f) => f.field).sort(), json: JSON.stringify(answer) + (error as Error).message };
  }
  throw new Error('expected the request to be refused');
}

describe('request validation', () => {
  it('accepts well-formed requests', () => {
    expect(parseRequest(ReserveKeyRequest, { key: KEY, connectorId: 'refunds', holder: 'agent', pendingTtlMs: 30_000, extra: 'ignored' })).toEqual({
      key: KEY,
      connectorId: 'refunds',
      holder: 'agent',
      pendingTtlMs: 30_000,
    });
    expect(parseRequest(CompleteKeyRequest, { key: KEY, leaseToken: LEASE, result: { a: [1, null] } }).result).toEqual({ a: [1, null] });
    expect(parseRequest(CompleteKeyRequest, { key: KEY, leaseToken: LEASE, result: null }).result).toBeNull();
    expect(parseRequest(CompleteKeyRequest, { key: KEY, leaseToken: LEASE })).not.toHaveProperty('result');
    expect(parseRequest(ConsumeRateRequest, { budgetKey: KEY, algorithm: 'sliding-window', count: 10, windowMs: 1_000 }).algorithm).toBe('sliding-window');
  });

  it('names every invalid field and never echoes what was sent', () => {
    const reserve = invalid(ReserveKeyRequest, { key: SECRET, connectorId: SECRET.repeat(30), holder: 7, pendingTtlMs: 1.5 });
    expect(reserve.fields).toEqual(['connectorId', 'holder', 'key', 'pendingTtlMs']);
    expect(reserve.json).not.toContain(SECRET);
    expect(reserve.json).toContain('"key"');

    const complete = invalid(CompleteKeyRequest, { key: KEY, leaseToken: SECRET });
    expect(complete.fields).toEqual(['leaseToken']);
    expect(complete.json).not.toContain(SECRET);

    expect(invalid(FailKeyRequest, { key: KEY, leaseToken: LEASE, code: '', retryable: 'yes' }).fields).toEqual(['code', 'retryable']);
    expect(invalid(ReconcileKeyRequest, { key: KEY, leaseToken: LEASE, outcome: SECRET }).json).not.toContain(SECRET);
    expect(invalid(ResolveKeyRequest, { decision: 're-execute', result: 1 }).fields).toEqual(['result']);
    expect(invalid(ConsumeRateRequest, { budgetKey: KEY, algorithm: 'token-bucket', count: 0, windowMs: -1 }).fields).toEqual(['algorithm', 'count', 'windowMs']);
    expect(invalid(ConsumeRateRequest, { budgetKey: KEY, algorithm: 'sliding-window', count: 50_000, windowMs: 1_000 }).fields).toEqual(['count']);
  });

  it('refuses a missing body and a non-object body as a whole', () => {
    expect(invalid(ReserveKeyRequest, undefined).fields).toEqual(['connectorId', 'holder', 'key', 'pendingTtlMs']);
    expect(invalid(ReserveKeyRequest, [SECRET]).fields).toEqual(['(body)']);
  });

  it('refuses a result nested too deeply, without overflowing the stack', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10_000; i += 1) deep = [deep];
    expect(invalid(CompleteKeyRequest, { key: KEY, leaseToken: LEASE, result: deep }).fields).toEqual(['result']);
  });
});

describe('status mapping at the edge', () => {
  it('maps every ledger code to its status', () => {
    const expected: Record<LedgerCode, number> = {
      'LEDGER.INVALID_REQUEST': 400,
      'LEDGER.UNAUTHORIZED': 401,
      'LEDGER.UNAUTHENTICATED': 401,
      'LEDGER.FORBIDDEN': 403,
      'LEDGER.PENDING_LIMIT': 429,
      'LEDGER.BUDGET_LIMIT': 429,
      'LEDGER.KEY_NOT_FOUND': 404,
      'LEDGER.KEY_HELD': 409,
      'LEDGER.KEY_COMPLETED': 409,
      'LEDGER.KEY_AMBIGUOUS': 409,
      'LEDGER.NOT_STALE': 409,
      'LEDGER.LEASE_LOST': 409,
      'LEDGER.NOT_AMBIGUOUS': 409,
      'LEDGER.UNKNOWN_KEY': 409,
      'LEDGER.NOT_EXPIRED': 409,
      'LEDGER.UNAVAILABLE': 503,
      'LEDGER.INTERNAL': 500,
    };
    expect(STATUS_BY_CODE).toEqual(expected);
    for (const [code, status] of Object.entries(expected)) expect(errorResponse(new LedgerError(code as LedgerCode)).status).toBe(status);
  });

  it('turns every fold rejection into a 409 with its own code', () => {
    const reasons = ['key-held', 'key-completed', 'key-ambiguous', 'not-stale', 'lease-lost', 'not-ambiguous', 'unknown-key', 'not-expired'] as const;
    const codes = reasons.map(codeForRejection);
    expect(new Set(codes).size).toBe(reasons.length);
    expect(codes.map((c) => STATUS_BY_CODE[c])).toEqual(reasons.map(() => 409));
    expect(codeForRejection('lease-lost')).toBe('LEDGER.LEASE_LOST');
  });

  it('tells callers to fail closed and retry on 503, and how to authenticate on 401', () => {
    const unavailable = errorResponse(new LedgerError('LEDGER.UNAVAILABLE', { reason: 'fold-deadline' }));
    expect(unavailable).toEqual({
      status: 503,
      headers: { 'retry-after': '1' },
      body: { code: 'LEDGER.UNAVAILABLE', message: expect.any(String), retryable: true, details: { reason: 'fold-deadline' } },
    });
    expect(errorResponse(new LedgerError('LEDGER.UNAUTHORIZED')).headers).toEqual({ 'www-authenticate': 'Bearer' });
    expect(errorResponse(new LedgerError('LEDGER.UNAUTHENTICATED')).headers).toEqual({ 'www-authenticate': 'Bearer' });
    // A bound frees up as the caller's keys complete; who the caller is does not change by retrying.
    expect(errorResponse(new LedgerError('LEDGER.PENDING_LIMIT')).body.retryable).toBe(true);
    expect(errorResponse(new LedgerError('LEDGER.FORBIDDEN')).body.retryable).toBe(false);
  });

  it('maps other coded errors by category, framework errors by status with a static text, anything else to 500', () => {
    expect(errorResponse(new ContractError('CONTRACT.INVALID_EVENT', 'field "x" is invalid')).status).toBe(400);
    expect(errorResponse(new GatehouseError('KAFKA.UNAVAILABLE', 'no broker', { category: 'unavailable', retryable: true })).status).toBe(503);
    const parse = errorResponse(new BadRequestException(`Unexpected token in JSON at position 3: ${SECRET}`));
    expect(parse.status).toBe(400);
    expect(JSON.stringify(parse.body)).not.toContain(SECRET);
    expect(errorResponse(new NotFoundException(`Cannot GET /${SECRET}`)).body).toEqual({ code: 'HTTP.NOT_FOUND', message: 'no such resource', retryable: false });
    expect(errorResponse(new PayloadTooLargeException()).status).toBe(413);
    // What express's body parser throws for an oversized body: an http-errors error, not a Nest one.
    const tooLarge = Object.assign(new Error(`request entity too large ${SECRET}`), { statusCode: 413, status: 413, expose: true, type: 'entity.too.large' });
    expect(errorResponse(tooLarge)).toEqual({ status: 413, headers: {}, body: { code: 'HTTP.PAYLOAD_TOO_LARGE', message: 'the request body is too large', retryable: false } });
    const crash = errorResponse(new TypeError(`cannot read ${SECRET}`));
    expect(crash).toEqual({ status: 500, headers: {}, body: { code: 'LEDGER.INTERNAL', message: 'the ledger failed', retryable: false } });
  });
});
