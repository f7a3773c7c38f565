import { describe, expect, it } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { EXPRESSION_LIMITS, evaluateExpression, parseExpression, type ExpressionScope } from './expression.js';

const scope: ExpressionScope = {
  input: { amount: 120, currency: 'EUR', path: '/tmp/report.csv', tags: ['a', 'b'], nested: { deep: { x: 1 } }, items: [{ id: 'first' }], flag: true, none: null },
  identity: { agent: 'refund-agent', tenant: 't1', actor: { id: 'u1', role: 'admin' } },
  call: { tool: 'stripe.refund' },
};

function run(source: string, s: ExpressionScope = scope): unknown {
  return evaluateExpression(parseExpression(source), s);
}

function errorOf(source: string): GatehouseError {
  try {
    parseExpression(source);
  } catch (error) {
    if (error instanceof GatehouseError) return error;
    throw error;
  }
  throw new Error('expected a parse error');
}

describe('condition language', () => {
  it.each([
    ['input.amount > 100', true],
    ['input.amount >= 120 and input.amount <= 120', true],
    ['input.amount < 100', false],
    ['input.currency == "EUR"', true],
    ["input.currency != 'USD'", true],
    ['input.currency in ["EUR", "GBP"]', true],
    ['"c" in input.tags', false],
    ['input.tags contains "b"', true],
    ['input.path startsWith "/tmp/"', true],
    ['input.path endsWith ".csv"', true],
    ['input.path contains "report"', true],
    ['input.nested.deep.x == 1', true],
    ['input.items[0].id == "first"', true],
    ['input["currency"] == "EUR"', true],
    ['identity.actor.role == "admin"', true],
    ['call.tool startsWith "stripe."', true],
    ['input.flag', true],
    ['input.none == null', true],
    ['input.amount * 2 - 40 == 200', true],
    ['input.amount / 0 == 1', false],
    ['-input.amount < 0', true],
    ['(input.amount + 1) % 2 == 1', true],
    ['input.amount > 100 && !(input.currency == "USD") || false', true],
  ])('%s → %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });

  it('binds not tighter than and, and and tighter than or', () => {
    expect(run('true or false and false')).toBe(true);
    expect(run('(true or false) and false')).toBe(false);
    expect(run('not false and false')).toBe(false);
    expect(run('not (false and false)')).toBe(true);
    expect(run('1 + 2 * 3 == 7')).toBe(true);
  });

  it('makes every comparison with a missing path false, != included', () => {
    for (const op of ['==', '!=', '<', '<=', '>', '>=']) expect(run(`input.missing ${op} 1`)).toBe(false);
    expect(run('input.missing == null')).toBe(false);
    expect(run('input.missing in [1]')).toBe(false);
    expect(run('input.amount.deeper == 1')).toBe(false);
    expect(run('input.tags[5] == "a"')).toBe(false);
    expect(run('not input.missing')).toBe(true);
  });

  it('compares only like types for ordering', () => {
    expect(run('input.currency > 1')).toBe(false);
    expect(run('input.currency < 1')).toBe(false);
    expect(run('"b" > "a"')).toBe(true);
    expect(run('input.amount == "120"')).toBe(false);
  });

  it('reports syntax errors with their position', () => {
    const error = errorOf('input.amount > ');
    expect(error.code).toBe('GATEKEEPER.EXPRESSION_SYNTAX');
    expect(error.details['position']).toBe(15);
    expect(errorOf('input.amount >> 3').details['position']).toBe(14);
    expect(errorOf('(input.a == 1').details['position']).toBe(13);
    expect(errorOf('"unterminated').details['position']).toBe(0);
    expect(errorOf('input.a == 1 input.b').details['position']).toBe(13);
    expect(errorOf('window.alert == 1').details['position']).toBe(0);
    expect(errorOf('input.a ; 1').details['position']).toBe(8);
    expect(errorOf('1 < 2 < 3').details['position']).toBe(6);
  });

  it('enforces length, depth and path limits at parse time', () => {
    expect(errorOf(`input.a == "${'x'.repeat(EXPRESSION_LIMITS.maxLength)}"`).code).toBe('GATEKEEPER.EXPRESSION_LIMIT');
    expect(errorOf(`${'('.repeat(40)}true${')'.repeat(40)}`).code).toBe('GATEKEEPER.EXPRESSION_LIMIT');
    expect(errorOf(`${'not '.repeat(40)}true`).code).toBe('GATEKEEPER.EXPRESSION_LIMIT');
    expect(errorOf(`input${'.a'.repeat(20)} == 1`).code).toBe('GATEKEEPER.EXPRESSION_LIMIT');
    expect(errorOf(Array.from({ length: 300 }, () => 'true').join(' or ')).code).toBe('GATEKEEPER.EXPRESSION_LIMIT');
    expect(errorOf(`input.a in [${Array.from({ length: 101 }, (_, i) => i).join(',')}]`).details['limit']).toBe('maxArrayItems');
  });

  it('refuses prototype paths at parse time', () => {
    for (const source of ['input.__proto__ == 1', 'input.constructor == 1', 'input.a.prototype == 1', 'input["__proto__"].polluted == true', 'identity.constructor.name == "Object"']) {
      expect(errorOf(source).code).toBe('GATEKEEPER.EXPRESSION_FORBIDDEN_PATH');
    }
  });

  it('reads only own properties of plain data, never inherited members', () => {
    expect(run('input.toString == null')).toBe(false);
    expect(run('input.hasOwnProperty != 1')).toBe(false);
    expect(run('input.tags.length == 2')).toBe(false);
    expect(run('input.currency.length == 3')).toBe(false);
    const polluted = JSON.parse('{"__proto__": {"admin": true}, "ok": 1}') as object;
    expect(run('input.admin == true', { ...scope, input: polluted })).toBe(false);
    const withFunction = { fn: () => true, date: new Date(0) };
    expect(run('input.fn == input.fn', { ...scope, input: withFunction })).toBe(false);
    expect(run('input.date == input.date', { ...scope, input: withFunction })).toBe(false);
  });

  it('never throws at evaluation, whatever the scope holds', () => {
    const hostile = { get boom(): never { throw new Error('x'); } };
    const source = parseExpression('input.boom == 1 or input.a.b.c == 1 or input.x[3] > 2 or identity.actor.role == "admin"');
    const trap = new Proxy({}, { ownKeys: () => { throw new Error('x'); }, getOwnPropertyDescriptor: () => { throw new Error('x'); } });
    for (const input of [null, 1, 'text', [], {}, hostile, undefined, { a: trap }, trap]) {
      expect(() => evaluateExpression(source, { input, identity: undefined, call: null })).not.toThrow();
    }
    expect(evaluateExpression(parseExpression('input.a == input.b'), { input: { a: [hostile], b: [{ ...{}, get boom(): never { throw new Error('y'); } }] }, identity: {}, call: {} })).toBeUndefined();
  });
});
