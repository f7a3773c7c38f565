// Validations per second of the schema guardrail on a realistic tool-arguments schema (an
// issue tracker's `create_ticket`), next to a hand-written check of the same schema measured
// in the same run, so the printed ratio is comparable across machines. Half the arguments are
// valid, half fail in one to three places (the guardrail then names every failing keyword).
import { type JsonValue } from '@gatehouse/contracts';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { createSchemaGuardrail } from '../guardrails/schema-guardrail.js';
import type { GuardrailInput } from '../guardrails/types.js';

const ARGUMENT_SETS = 1_000;
const WARM_UP_PASSES = 2;
const TIMED_PASSES = 20;
// The hand-written check is fast enough that a few passes would measure the timer and the JIT.
const BASELINE_PASSES = 400;

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;

const createTicketSchema: Record<string, JsonValue> = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    project: { type: 'string', pattern: '^[A-Z][A-Z0-9]{1,9}$' },
    title: { type: 'string', minLength: 1, maxLength: 200 },
    body: { type: 'string', maxLength: 10_000 },
    priority: { enum: [...PRIORITIES] },
    labels: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 50 }, maxItems: 10, uniqueItems: true },
    assignee: { type: 'object', properties: { id: { type: 'integer', minimum: 1 }, team: { type: 'string' } }, required: ['id'], additionalProperties: false },
    dueInDays: { type: 'integer', minimum: 0, maximum: 365 },
  },
  required: ['project', 'title', 'priority'],
  additionalProperties: false,
};

/** Runs the schema guardrail and a hand-written validator over the same arguments and prints both rates. */
export async function benchSchemaGuardrail(): Promise<void> {
  const argumentSets = buildArguments(ARGUMENT_SETS);
  const guardrail = createSchemaGuardrail();
  const signal = new AbortController().signal;
  const inputs: GuardrailInput[] = argumentSets.map((value) => ({
    placement: 'tool-args',
    value,
    tool: { id: 'create_ticket', inputSchema: createTicketSchema },
    context: {},
    signal,
  }));

  let denied = 0;
  const guardrailPass = async (): Promise<void> => {
    denied = 0;
    for (const input of inputs) if ((await guardrail.check(input)).action === 'deny') denied++;
  };
  let baselineDenied = 0;
  const baselinePass = async (): Promise<void> => {
    baselineDenied = 0;
    for (const value of argumentSets) if (handWrittenErrors(value).length > 0) baselineDenied++;
  };

  for (let i = 0; i < WARM_UP_PASSES; i++) await guardrailPass();
  const guardrailMs = await timed(TIMED_PASSES, guardrailPass);
  for (let i = 0; i < WARM_UP_PASSES; i++) await baselinePass();
  const baselineMs = await timed(BASELINE_PASSES, baselinePass);
  if (denied !== baselineDenied) throw new Error(`schema bench: guardrail denied ${denied}, baseline ${baselineDenied}`);

  const rate = (ARGUMENT_SETS * TIMED_PASSES) / (guardrailMs / 1000);
  const baselineRate = (ARGUMENT_SETS * BASELINE_PASSES) / (baselineMs / 1000);
  recordBenchFigure({
    benchmark: 'guard: JSON Schema guardrail',
    source: 'libs/guard/src/bench/schema-guardrail.bench.ts',
    case: `create_ticket schema, ${ARGUMENT_SETS.toLocaleString('en')} argument sets (half invalid)`,
    metric: 'validations per second',
    unit: 'validations/s',
    value: rate,
    baseline: 'a hand-written validator of the same schema (checked to deny as many)',
    baselineValue: baselineRate,
  });
  console.log(
    `schema-guardrail: ${Math.round(rate).toLocaleString('en')} validations/s ` +
      `(baseline hand-written validator ${Math.round(baselineRate).toLocaleString('en')}/s, ratio ${(rate / baselineRate).toFixed(3)}), ` +
      `${ARGUMENT_SETS} argument sets, ${denied} denied per pass`,
  );
}

async function timed(passes: number, pass: () => Promise<void>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < passes; i++) await pass();
  return performance.now() - start;
}

// Deterministic arguments: even indexes valid, odd ones broken in one to three ways.
function buildArguments(count: number): JsonValue[] {
  const sets: JsonValue[] = [];
  for (let i = 0; i < count; i++) {
    const args: Record<string, JsonValue> = {
      project: `OPS${i % 100}`,
      title: `Disk usage above threshold on node ${i}`,
      body: 'The node reports sustained disk usage above the alerting threshold. '.repeat(1 + (i % 5)),
      priority: PRIORITIES[i % PRIORITIES.length]!,
      labels: ['infra', `node-${i % 7}`, 'disk'],
      assignee: { id: 1 + (i % 40), team: 'sre' },
      dueInDays: i % 30,
    };
    if (i % 2 === 1) {
      if (i % 3 === 0) delete args['title'];
      if (i % 3 !== 0) args['priority'] = 'critical';
      if (i % 5 === 1) args['labels'] = ['infra', 'infra'];
      if (i % 7 === 1) args['assignee'] = { id: 0, team: 'sre', admin: true };
      if (i % 11 === 1) args['dueInDays'] = 400.5;
    }
    sets.push(args);
  }
  return sets;
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isInteger(value: JsonValue | undefined): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

const PROPERTIES = new Set(['project', 'title', 'body', 'priority', 'labels', 'assignee', 'dueInDays']);
const PROJECT = /^[A-Z][A-Z0-9]{1,9}$/u;

// What a careful engineer would write by hand for the same schema: collects every failure too.
function handWrittenErrors(value: JsonValue): string[] {
  const errors: string[] = [];
  if (!isObject(value)) return ['type at ""'];
  for (const key of ['project', 'title', 'priority']) if (!Object.hasOwn(value, key)) errors.push('required at ""');
  for (const key of Object.keys(value)) if (!PROPERTIES.has(key)) errors.push(`additionalProperties at "/${key}"`);
  const { project, title, body, priority, labels, assignee, dueInDays } = value;
  if (project !== undefined && (typeof project !== 'string' || !PROJECT.test(project))) errors.push('pattern at "/project"');
  if (title !== undefined && (typeof title !== 'string' || title.length < 1 || title.length > 200)) errors.push('maxLength at "/title"');
  if (body !== undefined && (typeof body !== 'string' || body.length > 10_000)) errors.push('maxLength at "/body"');
  if (priority !== undefined && !(PRIORITIES as readonly JsonValue[]).includes(priority)) errors.push('enum at "/priority"');
  if (labels !== undefined) {
    if (!Array.isArray(labels) || labels.length > 10) errors.push('maxItems at "/labels"');
    else {
      if (new Set(labels).size !== labels.length) errors.push('uniqueItems at "/labels"');
      labels.forEach((label, i) => {
        if (typeof label !== 'string' || label.length < 1 || label.length > 50) errors.push(`type at "/labels/${i}"`);
      });
    }
  }
  if (assignee !== undefined) {
    if (!isObject(assignee)) errors.push('type at "/assignee"');
    else {
      if (!isInteger(assignee['id']) || assignee['id'] < 1) errors.push('minimum at "/assignee/id"');
      if (assignee['team'] !== undefined && typeof assignee['team'] !== 'string') errors.push('type at "/assignee/team"');
      for (const key of Object.keys(assignee)) if (key !== 'id' && key !== 'team') errors.push(`additionalProperties at "/assignee/${key}"`);
    }
  }
  if (dueInDays !== undefined && (!isInteger(dueInDays) || dueInDays < 0 || dueInDays > 365)) errors.push('maximum at "/dueInDays"');
  return errors;
}
