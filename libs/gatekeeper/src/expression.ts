// The gatekeeper's condition language: a tokenizer, a recursive-descent parser and a total
// evaluator over a small AST. No `eval`, no `new Function`, no property access outside the
// three roots (`input`, `identity`, `call`) and only own properties of plain JSON values.
import { GatehouseError, jsonEqual, type JsonValue } from '@gatehouse/contracts';

/** Bounds applied at load time, so evaluation cost is bounded by the bundle, never by the input. */
export const EXPRESSION_LIMITS = Object.freeze({
  maxLength: 2_000,
  maxTokens: 400,
  maxDepth: 24,
  maxPathSegments: 16,
  maxArrayItems: 100,
});

/** The roots a path may start from: `input` (untrusted tool arguments), `identity` (trusted), `call` (trusted). */
export type PathRoot = 'input' | 'identity' | 'call';

export type BinaryOperator =
  | '==' | '!=' | '<' | '<=' | '>' | '>='
  | 'in' | 'startsWith' | 'endsWith' | 'contains'
  | '+' | '-' | '*' | '/' | '%';

/** The parsed form of a condition (plain data). */
export type Expr =
  | { readonly kind: 'literal'; readonly value: JsonValue }
  | { readonly kind: 'array'; readonly items: readonly Expr[] }
  | { readonly kind: 'path'; readonly root: PathRoot; readonly segments: readonly (string | number)[] }
  | { readonly kind: 'not'; readonly operand: Expr }
  | { readonly kind: 'neg'; readonly operand: Expr }
  | { readonly kind: 'and' | 'or'; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'binary'; readonly op: BinaryOperator; readonly left: Expr; readonly right: Expr };

/** What a condition is evaluated against. Only these three objects are reachable. */
export interface ExpressionScope {
  readonly input: unknown;
  readonly identity: unknown;
  readonly call: unknown;
}

/** Keys no path may name, even when a value carries them as own properties. */
const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const ROOTS: ReadonlySet<string> = new Set(['input', 'identity', 'call']);
const WORD_OPERATORS: ReadonlySet<string> = new Set(['in', 'startsWith', 'endsWith', 'contains']);
const COMPARISONS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=', 'in', 'startsWith', 'endsWith', 'contains']);

type TokenKind = 'number' | 'string' | 'ident' | 'op' | 'punct' | 'eof';
interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly value?: JsonValue;
  readonly pos: number;
}

function syntaxError(position: number, expected: string): GatehouseError {
  return new GatehouseError('GATEKEEPER.EXPRESSION_SYNTAX', `condition syntax error at position ${position}: expected ${expected}`, {
    category: 'validation',
    details: { position, expected },
  });
}

function limitError(limit: keyof typeof EXPRESSION_LIMITS, position: number): GatehouseError {
  return new GatehouseError('GATEKEEPER.EXPRESSION_LIMIT', `condition exceeds ${limit} (${EXPRESSION_LIMITS[limit]}) at position ${position}`, {
    category: 'validation',
    details: { limit, max: EXPRESSION_LIMITS[limit], position },
  });
}

function tokenize(source: string): Token[] {
  if (source.length > EXPRESSION_LIMITS.maxLength) throw limitError('maxLength', EXPRESSION_LIMITS.maxLength);
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (tokens.length >= EXPRESSION_LIMITS.maxTokens) throw limitError('maxTokens', i);
    const start = i;
    if (c >= '0' && c <= '9') {
      while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      if (source[i] === '.' && /[0-9]/.test(source[i + 1] ?? '')) {
        i++;
        while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      }
      const text = source.slice(start, i);
      const value = Number(text);
      if (!Number.isFinite(value)) throw syntaxError(start, 'a finite number');
      tokens.push({ kind: 'number', text, value, pos: start });
      continue;
    }
    if (c === '"' || c === "'") {
      i++;
      let value = '';
      for (;;) {
        if (i >= source.length) throw syntaxError(start, 'a closing quote');
        const d = source[i]!;
        if (d === c) {
          i++;
          break;
        }
        if (d === '\\') {
          const e = source[i + 1];
          const escaped = e === 'n' ? '\n' : e === 't' ? '\t' : e === '\\' || e === '"' || e === "'" ? e : undefined;
          if (escaped === undefined) throw syntaxError(i, 'a known escape (\\n \\t \\\\ \\" \\\')');
          value += escaped;
          i += 2;
          continue;
        }
        value += d;
        i++;
      }
      tokens.push({ kind: 'string', text: source.slice(start, i), value, pos: start });
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      while (i < source.length && /[A-Za-z0-9_$]/.test(source[i]!)) i++;
      tokens.push({ kind: 'ident', text: source.slice(start, i), pos: start });
      continue;
    }
    const two = source.slice(i, i + 2);
    if (two === '==' || two === '!=' || two === '<=' || two === '>=' || two === '&&' || two === '||') {
      tokens.push({ kind: 'op', text: two, pos: start });
      i += 2;
      continue;
    }
    if ('<>+-*/%!'.includes(c)) {
      tokens.push({ kind: 'op', text: c, pos: start });
      i++;
      continue;
    }
    if ('()[],.'.includes(c)) {
      tokens.push({ kind: 'punct', text: c, pos: start });
      i++;
      continue;
    }
    throw syntaxError(start, 'an operator, literal or path');
  }
  tokens.push({ kind: 'eof', text: '', pos: source.length });
  return tokens;
}

class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parse(): Expr {
    const expr = this.or();
    const next = this.peek();
    if (next.kind !== 'eof') throw syntaxError(next.pos, 'end of condition');
    return expr;
  }

  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private take(): Token {
    const token = this.tokens[this.index]!;
    if (token.kind !== 'eof') this.index++;
    return token;
  }

  private isWord(text: string): boolean {
    const t = this.peek();
    return t.kind === 'ident' && t.text === text;
  }

  private isOp(...texts: string[]): boolean {
    const t = this.peek();
    return t.kind === 'op' && texts.includes(t.text);
  }

  private isPunct(text: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === text;
  }

  private expectPunct(text: string): Token {
    const t = this.peek();
    if (t.kind !== 'punct' || t.text !== text) throw syntaxError(t.pos, `'${text}'`);
    return this.take();
  }

  private nested<T>(position: number, parse: () => T): T {
    if (++this.depth > EXPRESSION_LIMITS.maxDepth) throw limitError('maxDepth', position);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private or(): Expr {
    return this.nested(this.peek().pos, () => {
      let left = this.and();
      while (this.isWord('or') || this.isOp('||')) {
        this.take();
        left = { kind: 'or', left, right: this.and() };
      }
      return left;
    });
  }

  private and(): Expr {
    let left = this.not();
    while (this.isWord('and') || this.isOp('&&')) {
      this.take();
      left = { kind: 'and', left, right: this.not() };
    }
    return left;
  }

  private not(): Expr {
    if (this.isWord('not') || this.isOp('!')) {
      const t = this.take();
      return this.nested(t.pos, () => ({ kind: 'not', operand: this.not() }));
    }
    return this.comparison();
  }

  private comparison(): Expr {
    const left = this.additive();
    const t = this.peek();
    const op = t.kind === 'op' || (t.kind === 'ident' && WORD_OPERATORS.has(t.text)) ? t.text : undefined;
    if (op === undefined || !COMPARISONS.has(op)) return left;
    this.take();
    const right = this.additive();
    const after = this.peek();
    // Comparisons do not chain: `a < b < c` is a mistake, not a range test.
    if ((after.kind === 'op' && COMPARISONS.has(after.text)) || (after.kind === 'ident' && WORD_OPERATORS.has(after.text))) {
      throw syntaxError(after.pos, "'and' or 'or' between comparisons");
    }
    return { kind: 'binary', op: op as BinaryOperator, left, right };
  }

  private additive(): Expr {
    let left = this.multiplicative();
    while (this.isOp('+', '-')) {
      const op = this.take().text as '+' | '-';
      left = { kind: 'binary', op, left, right: this.multiplicative() };
    }
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    while (this.isOp('*', '/', '%')) {
      const op = this.take().text as '*' | '/' | '%';
      left = { kind: 'binary', op, left, right: this.unary() };
    }
    return left;
  }

  private unary(): Expr {
    if (this.isOp('-')) {
      const t = this.take();
      return this.nested(t.pos, () => ({ kind: 'neg', operand: this.unary() }));
    }
    return this.primary();
  }

  private primary(): Expr {
    const t = this.peek();
    if (t.kind === 'number' || t.kind === 'string') {
      this.take();
      return { kind: 'literal', value: t.value! };
    }
    if (t.kind === 'punct' && t.text === '(') {
      this.take();
      const inner = this.nested(t.pos, () => this.or());
      this.expectPunct(')');
      return inner;
    }
    if (t.kind === 'punct' && t.text === '[') {
      this.take();
      const items: Expr[] = [];
      if (!this.isPunct(']')) {
        for (;;) {
          if (items.length >= EXPRESSION_LIMITS.maxArrayItems) throw limitError('maxArrayItems', this.peek().pos);
          items.push(this.nested(t.pos, () => this.or()));
          if (!this.isPunct(',')) break;
          this.take();
        }
      }
      this.expectPunct(']');
      return { kind: 'array', items };
    }
    if (t.kind === 'ident') {
      if (t.text === 'true' || t.text === 'false') {
        this.take();
        return { kind: 'literal', value: t.text === 'true' };
      }
      if (t.text === 'null') {
        this.take();
        return { kind: 'literal', value: null };
      }
      if (ROOTS.has(t.text)) {
        this.take();
        return this.path(t.text as PathRoot);
      }
      throw syntaxError(t.pos, "a path starting with 'input', 'identity' or 'call'");
    }
    throw syntaxError(t.pos, 'a literal, path or parenthesised condition');
  }

  private path(root: PathRoot): Expr {
    const segments: (string | number)[] = [];
    for (;;) {
      const t = this.peek();
      let segment: string | number;
      if (this.isPunct('.')) {
        this.take();
        const name = this.peek();
        if (name.kind !== 'ident') throw syntaxError(name.pos, 'a property name');
        this.take();
        segment = name.text;
      } else if (this.isPunct('[')) {
        this.take();
        const key = this.peek();
        if (key.kind === 'number' && Number.isInteger(key.value)) segment = key.value as number;
        else if (key.kind === 'string') segment = key.value as string;
        else throw syntaxError(key.pos, 'an integer index or a quoted key');
        this.take();
        this.expectPunct(']');
      } else {
        return { kind: 'path', root, segments };
      }
      if (typeof segment === 'string' && FORBIDDEN_SEGMENTS.has(segment)) {
        throw new GatehouseError('GATEKEEPER.EXPRESSION_FORBIDDEN_PATH', `condition names a forbidden property at position ${t.pos}`, {
          category: 'validation',
          details: { position: t.pos, segment },
        });
      }
      segments.push(segment);
      if (segments.length > EXPRESSION_LIMITS.maxPathSegments) throw limitError('maxPathSegments', t.pos);
    }
  }
}

/**
 * Parses a condition. Throws a GatehouseError (`GATEKEEPER.EXPRESSION_SYNTAX`,
 * `GATEKEEPER.EXPRESSION_LIMIT` or `GATEKEEPER.EXPRESSION_FORBIDDEN_PATH`) with the position;
 * the gatekeeper calls it when a bundle is loaded, so a bad condition never reaches evaluation.
 */
export function parseExpression(source: string): Expr {
  return new Parser(tokenize(source)).parse();
}

/** A property read that only sees own properties of plain JSON objects and in-range array items. */
function read(value: unknown, segment: string | number): unknown {
  if (Array.isArray(value)) {
    return typeof segment === 'number' && segment >= 0 && segment < value.length ? value[segment] : undefined;
  }
  if (typeof value !== 'object' || value === null || typeof segment !== 'string') return undefined;
  if (FORBIDDEN_SEGMENTS.has(segment)) return undefined;
  // A data property only: a getter (never JSON) is not run, so evaluation cannot throw.
  const descriptor = Object.getOwnPropertyDescriptor(value, segment);
  return descriptor !== undefined && 'value' in descriptor ? (descriptor.value as unknown) : undefined;
}

function isPlainData(value: unknown): value is JsonValue {
  if (value === null) return true;
  const type = typeof value;
  if (type === 'string' || type === 'boolean') return true;
  if (type === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return true;
  if (type === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    return proto === Object.prototype || proto === null;
  }
  return false;
}

/**
 * JSON equality (`jsonEqual` of @gatehouse/contracts) for policies, which never throw: values
 * nested past its depth limit are unequal.
 */
export function valuesEqual(a: unknown, b: unknown): boolean {
  try {
    return jsonEqual(a, b);
  } catch (error) {
    if (error instanceof RangeError) return false;
    throw error;
  }
}

function compare(op: BinaryOperator, left: unknown, right: unknown): boolean {
  if (left === undefined || right === undefined) return false;
  switch (op) {
    case '==':
      return valuesEqual(left, right);
    case '!=':
      return !valuesEqual(left, right);
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const ordered = (typeof left === 'number' && typeof right === 'number') || (typeof left === 'string' && typeof right === 'string');
      if (!ordered) return false;
      const l = left as number | string;
      const r = right as number | string;
      return op === '<' ? l < r : op === '<=' ? l <= r : op === '>' ? l > r : l >= r;
    }
    case 'in':
      return Array.isArray(right) && right.some((item) => valuesEqual(left, item));
    case 'contains':
      if (typeof left === 'string') return typeof right === 'string' && left.includes(right);
      return Array.isArray(left) && left.some((item) => valuesEqual(item, right));
    case 'startsWith':
      return typeof left === 'string' && typeof right === 'string' && left.startsWith(right);
    case 'endsWith':
      return typeof left === 'string' && typeof right === 'string' && left.endsWith(right);
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
      return false;
    default: {
      const unreachable: never = op;
      return unreachable;
    }
  }
}

function arithmetic(op: '+' | '-' | '*' | '/' | '%', left: unknown, right: unknown): number | undefined {
  if (typeof left !== 'number' || typeof right !== 'number') return undefined;
  const result = op === '+' ? left + right : op === '-' ? left - right : op === '*' ? left * right : op === '/' ? left / right : left % right;
  return Number.isFinite(result) ? result : undefined;
}

/**
 * Evaluates a parsed condition. Total: it never throws. A missing path, a non-JSON value or an
 * ill-typed operand yields `undefined`; every comparison with `undefined` (including `!=`) is
 * false; `and`/`or`/`not` treat only `true` as true; arithmetic on non-numbers, division by zero
 * and overflow yield `undefined`.
 */
export function evaluateExpression(expr: Expr, scope: ExpressionScope): JsonValue | undefined {
  try {
    return evaluateNode(expr, scope);
  } catch {
    // Only a host object that is not JSON (a throwing getter or proxy deep in a value) gets here.
    return undefined;
  }
}

function evaluateNode(expr: Expr, scope: ExpressionScope): JsonValue | undefined {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'array': {
      const items: JsonValue[] = [];
      for (const item of expr.items) {
        const v = evaluateNode(item, scope);
        if (v === undefined) return undefined;
        items.push(v);
      }
      return items;
    }
    case 'path': {
      let value: unknown = scope[expr.root];
      for (const segment of expr.segments) {
        value = read(value, segment);
        if (value === undefined) return undefined;
      }
      return isPlainData(value) ? value : undefined;
    }
    case 'not':
      return evaluateNode(expr.operand, scope) !== true;
    case 'neg': {
      const v = evaluateNode(expr.operand, scope);
      return typeof v === 'number' ? -v : undefined;
    }
    case 'and':
      return evaluateNode(expr.left, scope) === true && evaluateNode(expr.right, scope) === true;
    case 'or':
      return evaluateNode(expr.left, scope) === true || evaluateNode(expr.right, scope) === true;
    case 'binary': {
      const left = evaluateNode(expr.left, scope);
      const right = evaluateNode(expr.right, scope);
      if (expr.op === '+' || expr.op === '-' || expr.op === '*' || expr.op === '/' || expr.op === '%') return arithmetic(expr.op, left, right);
      return compare(expr.op, left, right);
    }
    default: {
      const unreachable: never = expr;
      return unreachable;
    }
  }
}
