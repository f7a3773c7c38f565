// HazelJS's protected tools and the plain-function, HazelJS-tool, Skillgate and MCP adapters that
// make them. A tool is data plus `execute`; the gatekeeper decides before `execute` runs.
import { readOptions } from '@gatehouse/contracts';
import { configError, GatekeeperError, TOOL_CLASSIFICATIONS, TOOL_RISK_LEVELS, type ToolClassification, type ToolInvocationContext, type ToolRiskLevel } from '@gatehouse/gatekeeper/hazeljs';

/** A schema the gatekeeper validates with (a zod schema: `safeParseAsync` or `safeParse`). */
export interface SchemaLike<T = unknown> {
  safeParse?(value: unknown): { readonly success: boolean; readonly data?: T };
  safeParseAsync?(value: unknown): Promise<{ readonly success: boolean; readonly data?: T }>;
}

/** HazelJS's `ProtectedTool`: what `execute` runs once the call is allowed. */
export interface ProtectedTool<TInput = Record<string, unknown>, TOutput = unknown> {
  readonly name: string;
  readonly version?: string;
  readonly description?: string;
  /** Validated in every mode before any policy runs (HazelJS's structural validation). */
  readonly inputSchema?: SchemaLike<TInput>;
  readonly outputSchema?: SchemaLike<TOutput>;
  readonly classification: ToolClassification;
  readonly riskLevel?: ToolRiskLevel;
  readonly readOnly?: boolean;
  /** Output keys replaced by `[REDACTED]` before the caller sees them (with HazelJS's sensitive names); also hidden from a reviewer. */
  readonly redactFields?: readonly string[];
  /** Descriptive, as in HazelJS (no rule reads it). */
  readonly estimatedCostUnits?: number;
  /** Every allowed call of this tool needs a person's approval first (from HazelJS tool and Skillgate metadata). */
  readonly requiresApproval?: boolean;
  execute(input: TInput, context: ToolInvocationContext<TInput>): Promise<TOutput>;
}

/** The metadata `fromFunction` (and `fromMcpTool`) take. */
export interface ToolMeta<TInput, TOutput> {
  readonly classification?: ToolClassification;
  readonly riskLevel?: ToolRiskLevel;
  readonly inputSchema?: SchemaLike<TInput>;
  readonly outputSchema?: SchemaLike<TOutput>;
  readonly redactFields?: readonly string[];
  readonly estimatedCostUnits?: number;
  readonly version?: string;
  readonly description?: string;
  readonly requiresApproval?: boolean;
}

const META_KEYS = ['classification', 'riskLevel', 'inputSchema', 'outputSchema', 'redactFields', 'estimatedCostUnits', 'version', 'description', 'requiresApproval'];
const TOOL_KEYS = ['name', 'execute', ...META_KEYS, 'readOnly'];

function bag(where: string, value: unknown, known: readonly string[]): Readonly<Record<string, unknown>> {
  try {
    return readOptions(where, value, known);
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : `${where}: invalid options`, { field: where });
  }
}

const isSchema = (v: unknown) => v !== null && typeof v === 'object' && (typeof (v as SchemaLike).safeParse === 'function' || typeof (v as SchemaLike).safeParseAsync === 'function');

function checkMeta(where: string, m: Readonly<Record<string, unknown>>): void {
  const bad = (field: string, expected: string) => configError(`${where}: ${field} must be ${expected}`, { field });
  if (m['classification'] !== undefined && !TOOL_CLASSIFICATIONS.includes(m['classification'] as ToolClassification)) throw bad('classification', TOOL_CLASSIFICATIONS.join(', '));
  if (m['riskLevel'] !== undefined && !TOOL_RISK_LEVELS.includes(m['riskLevel'] as ToolRiskLevel)) throw bad('riskLevel', TOOL_RISK_LEVELS.join(', '));
  for (const f of ['inputSchema', 'outputSchema']) if (m[f] !== undefined && !isSchema(m[f])) throw bad(f, 'a schema with safeParse or safeParseAsync (zod)');
  if (m['redactFields'] !== undefined && !(Array.isArray(m['redactFields']) && m['redactFields'].every((f) => typeof f === 'string'))) throw bad('redactFields', 'a list of key names');
  for (const f of ['version', 'description']) if (m[f] !== undefined && typeof m[f] !== 'string') throw bad(f, 'a string');
  if (m['estimatedCostUnits'] !== undefined && !(typeof m['estimatedCostUnits'] === 'number' && Number.isFinite(m['estimatedCostUnits']))) throw bad('estimatedCostUnits', 'a number');
  for (const f of ['requiresApproval', 'readOnly']) if (m[f] !== undefined && typeof m[f] !== 'boolean') throw bad(f, 'a boolean');
}

function tool<TInput, TOutput>(name: unknown, meta: Readonly<Record<string, unknown>>, defaults: { classification: ToolClassification; riskLevel: ToolRiskLevel }, execute: (input: TInput) => Promise<TOutput>): ProtectedTool<TInput, TOutput> {
  if (typeof name !== 'string' || name.length === 0) throw configError('a tool needs a non-empty name', { field: 'name' });
  const classification = (meta['classification'] as ToolClassification | undefined) ?? defaults.classification;
  return Object.freeze({
    ...(meta as Partial<ProtectedTool<TInput, TOutput>>),
    name,
    classification,
    riskLevel: (meta['riskLevel'] as ToolRiskLevel | undefined) ?? defaults.riskLevel,
    readOnly: classification === 'read',
    execute: (input: TInput) => execute(input),
  }) as ProtectedTool<TInput, TOutput>;
}

/** A plain function as a protected tool (classification `read` and risk `low` by default, as HazelJS). */
export function fromFunction<TInput = Record<string, unknown>, TOutput = unknown>(name: string, fn: (input: TInput) => Promise<TOutput> | TOutput, meta: ToolMeta<TInput, TOutput> = {}): ProtectedTool<TInput, TOutput> {
  if (typeof fn !== 'function') throw configError('fromFunction needs a function', { field: 'fn' });
  const m = bag('fromFunction', meta, META_KEYS);
  checkMeta('fromFunction', m);
  return tool(name, m, { classification: 'read', riskLevel: 'low' }, async (input: TInput) => fn(input));
}

/** An MCP tool: `callTool(name, input)` runs it (classification `write` and risk `medium` by default). */
export function fromMcpTool<TInput = Record<string, unknown>, TOutput = unknown>(descriptor: { readonly name: string; readonly description?: string }, callTool: (name: string, input: TInput) => Promise<TOutput>, meta: ToolMeta<TInput, TOutput> = {}): ProtectedTool<TInput, TOutput> {
  const d = bag('fromMcpTool descriptor', descriptor, ['name', 'description']);
  if (typeof callTool !== 'function') throw configError('fromMcpTool needs callTool(name, input)', { field: 'callTool' });
  const m = bag('fromMcpTool', meta, META_KEYS);
  checkMeta('fromMcpTool', m);
  const name = d['name'] as string;
  return tool(name, { ...(d['description'] === undefined ? {} : { description: d['description'] }), ...m }, { classification: 'write', riskLevel: 'medium' }, (input: TInput) => callTool(name, input));
}

/** HazelJS tool metadata (`@Tool` on an agent class): the method runs bound to its target. */
export interface HazelToolLike<TInput = Record<string, unknown>> {
  readonly name: string;
  readonly description?: string;
  readonly schema?: SchemaLike<TInput>;
  readonly requiresApproval?: boolean;
  readonly riskLevel?: ToolRiskLevel;
  readonly readOnly?: boolean;
  readonly capability?: string;
  /** Called bound to `target` (its `this`). */
  method(input: TInput): unknown;
  readonly target: object;
}

/** A HazelJS tool: read-only → `read`, high/critical risk → `destructive`, else `write`; `requiresApproval` is honoured. */
export function fromHazelTool<TInput = Record<string, unknown>, TOutput = unknown>(hazelTool: HazelToolLike<TInput>): ProtectedTool<TInput, TOutput> {
  const t = bag('fromHazelTool', hazelTool, ['name', 'description', 'schema', 'requiresApproval', 'riskLevel', 'readOnly', 'capability', 'method', 'target']);
  if (typeof t['method'] !== 'function' || t['target'] === null || typeof t['target'] !== 'object') throw configError('fromHazelTool needs method and target', { field: 'method' });
  const risk = t['riskLevel'] as ToolRiskLevel | undefined;
  const classification: ToolClassification = t['readOnly'] === true ? 'read' : risk === 'critical' || risk === 'high' ? 'destructive' : 'write';
  const meta = { classification, riskLevel: risk ?? (t['readOnly'] === true ? 'low' : 'medium'), ...(t['schema'] === undefined ? {} : { inputSchema: t['schema'] }), ...(t['description'] === undefined ? {} : { description: t['description'] }), ...(t['requiresApproval'] === undefined ? {} : { requiresApproval: t['requiresApproval'] }) };
  checkMeta('fromHazelTool', meta);
  const method = t['method'] as (this: unknown, input: TInput) => unknown;
  return tool(t['name'], meta, { classification, riskLevel: 'medium' }, async (input: TInput) => (await method.call(t['target'], input)) as TOutput);
}

/** A Skillgate skill and its invoker: `admin` and `destructive` classes are `destructive`; `requiresApproval` is honoured. */
export function fromSkillgate<TInput = Record<string, unknown>, TOutput = unknown>(
  skill: { readonly name: string; readonly description: string; readonly class: 'read' | 'write' | 'destructive' | 'admin'; readonly readOnly: boolean; readonly requiresApproval: boolean; readonly method?: string; readonly path?: string },
  invoker: (input: TInput) => Promise<TOutput>,
): ProtectedTool<TInput, TOutput> {
  const s = bag('fromSkillgate', skill, ['name', 'description', 'class', 'readOnly', 'requiresApproval', 'method', 'path']);
  if (typeof invoker !== 'function') throw configError('fromSkillgate needs an invoker', { field: 'invoker' });
  const classes: Readonly<Record<string, ToolClassification>> = { read: 'read', write: 'write', destructive: 'destructive', admin: 'destructive' };
  const classification = classes[s['class'] as string];
  if (classification === undefined) throw configError('fromSkillgate: class must be read, write, destructive or admin', { field: 'class' });
  const meta = { classification, riskLevel: classification === 'destructive' ? 'critical' : 'medium', description: s['description'], requiresApproval: s['requiresApproval'] };
  checkMeta('fromSkillgate', meta);
  return tool(s['name'], meta, { classification, riskLevel: 'medium' }, (input: TInput) => invoker(input));
}

/** A checked copy of a tool handed to `execute` (a tool made by hand is held to the same fields). */
export function readTool(value: unknown): ProtectedTool<unknown, unknown> {
  if (value === null || typeof value !== 'object') throw new GatekeeperError('HAZELJS.VALIDATION', 'tool must be a ProtectedTool (fromFunction, fromMcpTool ...)', { field: 'tool' });
  const t = value as Record<string, unknown>;
  const unknownKey = Object.keys(t).find((k) => !TOOL_KEYS.includes(k));
  if (unknownKey !== undefined) throw new GatekeeperError('HAZELJS.VALIDATION', `tool field "${unknownKey}" is not a ProtectedTool field`, { field: unknownKey });
  if (typeof t['name'] !== 'string' || t['name'].length === 0 || typeof t['execute'] !== 'function' || !TOOL_CLASSIFICATIONS.includes(t['classification'] as ToolClassification)) {
    throw new GatekeeperError('HAZELJS.VALIDATION', 'tool needs a name, a classification and execute', { field: 'tool' });
  }
  try {
    checkMeta('tool', t);
  } catch (cause) {
    throw new GatekeeperError('HAZELJS.VALIDATION', cause instanceof Error ? cause.message : 'invalid tool', { field: 'tool' });
  }
  return t as unknown as ProtectedTool<unknown, unknown>;
}

/** Validates `value` with `schema` (none: valid as is); the parsed data on success. */
export async function parseWith(schema: SchemaLike | undefined, value: unknown): Promise<{ readonly ok: true; readonly data: unknown } | { readonly ok: false }> {
  if (schema === undefined) return { ok: true, data: value };
  try {
    const result = schema.safeParseAsync !== undefined ? await schema.safeParseAsync(value) : schema.safeParse!(value);
    return result.success ? { ok: true, data: result.data } : { ok: false };
  } catch {
    return { ok: false };
  }
}
