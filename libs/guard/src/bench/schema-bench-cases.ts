// The schema bench's inputs: two tool schemas of different kinds, each with deterministic
// argument sets (even indexes valid, odd ones broken in one to three places) and the check a
// careful engineer would write by hand for it, which collects every failure too.
// - `create_ticket`: one flat object of bounded strings, an enum, a small array and a nested object.
// - `deploy_plan`: an array of steps through `$ref`/`$defs`, each a `oneOf` of three actions
//   (one with an `anyOf`), `patternProperties` for environment variables, `multipleOf` numbers.
import { type JsonValue } from '@gatehouse/contracts';
import { CREATE_TICKET_SCHEMA, DEPLOY_PLAN_SCHEMA } from '@gatehouse/json-schema/testing';

/** One input shape of the bench. */
export interface SchemaBenchCase {
  readonly name: string;
  readonly schema: Record<string, JsonValue>;
  readonly argumentSets: readonly JsonValue[];
  /** The hand-written check: the failures it finds (empty when the arguments are valid). */
  readonly handWrittenErrors: (value: JsonValue) => string[];
}

export const ARGUMENT_SETS = 1_000;

/** Both shapes, built once. */
export function schemaBenchCases(): readonly SchemaBenchCase[] {
  return [
    { name: 'create_ticket', schema: CREATE_TICKET_SCHEMA, argumentSets: createTicketArguments(ARGUMENT_SETS), handWrittenErrors: createTicketErrors },
    { name: 'deploy_plan', schema: DEPLOY_PLAN_SCHEMA, argumentSets: deployPlanArguments(ARGUMENT_SETS), handWrittenErrors: deployPlanErrors },
  ];
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isInteger(value: JsonValue | undefined): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

// ——— create_ticket ———

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;


function createTicketArguments(count: number): JsonValue[] {
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

const TICKET_PROPERTIES = new Set(['project', 'title', 'body', 'priority', 'labels', 'assignee', 'dueInDays']);
const PROJECT = /^[A-Z][A-Z0-9]{1,9}$/u;

function createTicketErrors(value: JsonValue): string[] {
  const errors: string[] = [];
  if (!isObject(value)) return ['type at ""'];
  for (const key of ['project', 'title', 'priority']) if (!Object.hasOwn(value, key)) errors.push('required at ""');
  for (const key of Object.keys(value)) if (!TICKET_PROPERTIES.has(key)) errors.push(`additionalProperties at "/${key}"`);
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

// ——— deploy_plan ———

// The schemas live in @gatehouse/json-schema/testing, shared with that library's fast-path spec.

function deployStep(i: number, s: number): Record<string, JsonValue> {
  const name = `step-${s}`;
  switch ((i + s) % 3) {
    case 0:
      return {
        name,
        action: { kind: 'deploy', image: `registry.local/api:${i % 50}`, replicas: 1 + ((i + s) % 8), resources: { cpu: 0.25 * (1 + (s % 8)), memoryMb: 64 * (1 + (i % 16)) } },
        env: { LOG_LEVEL: 'info', REGION: `eu-${s % 3}` },
      };
    case 1:
      return { name, action: { kind: 'wait', seconds: 0.5 * ((i + s) % 120) } };
    default:
      return { name, action: { kind: 'notify', channel: s % 2 === 0 ? `#deploys-${i % 9}` : `oncall${i % 5}@example.org` } };
  }
}

function deployPlanArguments(count: number): JsonValue[] {
  const sets: JsonValue[] = [];
  for (let i = 0; i < count; i++) {
    const steps = Array.from({ length: 1 + (i % 6) }, (_, s) => deployStep(i, s));
    const args: Record<string, JsonValue> = { service: `payments-${i % 13}`, steps, rollback: i % 4 === 0 };
    if (i % 2 === 1) {
      const last = steps[steps.length - 1]!;
      if (i % 3 === 0) last['name'] = `Step ${i}`;
      if (i % 3 === 1) last['action'] = { kind: 'wait', seconds: 1.3 };
      if (i % 3 === 2) last['action'] = { kind: 'deploy', image: 'api', replicas: 0, resources: { cpu: 0.3, memoryMb: 100 } };
      if (i % 5 === 1) steps[0]!['env'] = { log_level: 'debug' };
      if (i % 7 === 1) steps[0]!['action'] = { kind: 'notify', channel: 'nobody' };
    }
    sets.push(args);
  }
  return sets;
}

const STEP_NAME = /^[a-z][a-z0-9-]{0,39}$/u;
const ENV_NAME = /^[A-Z][A-Z0-9_]*$/u;
const EMAIL_CHANNEL = /^[^@\s]+@[a-z0-9.-]+$/u;
const SLACK_CHANNEL = /^#[a-z0-9-]+$/u;

function onlyKeys(value: { [key: string]: JsonValue }, allowed: readonly string[]): boolean {
  return Object.keys(value).every((key) => allowed.includes(key));
}

function isMultiple(value: number, divisor: number): boolean {
  return Number.isInteger(value / divisor);
}

function resourcesValid(value: JsonValue | undefined): boolean {
  if (value === undefined) return true;
  if (!isObject(value) || !onlyKeys(value, ['cpu', 'memoryMb'])) return false;
  const { cpu, memoryMb } = value;
  return typeof cpu === 'number' && cpu > 0 && isMultiple(cpu, 0.25) && isInteger(memoryMb) && memoryMb >= 64 && memoryMb % 64 === 0;
}

// Which of the three actions `action` is; `oneOf` holds when exactly one matches.
function actionMatches(action: JsonValue | undefined): number {
  if (!isObject(action)) return 0;
  const { kind, image, replicas, seconds, channel } = action;
  const deploy =
    kind === 'deploy' &&
    onlyKeys(action, ['kind', 'image', 'replicas', 'resources']) &&
    typeof image === 'string' &&
    image.length >= 3 &&
    isInteger(replicas) &&
    replicas >= 1 &&
    replicas <= 50 &&
    resourcesValid(action['resources']);
  const wait = kind === 'wait' && onlyKeys(action, ['kind', 'seconds']) && typeof seconds === 'number' && seconds >= 0 && seconds <= 3600 && isMultiple(seconds, 0.5);
  const notify = kind === 'notify' && onlyKeys(action, ['kind', 'channel']) && typeof channel === 'string' && (EMAIL_CHANNEL.test(channel) || SLACK_CHANNEL.test(channel));
  return Number(deploy) + Number(wait) + Number(notify);
}

function stepErrors(step: JsonValue, at: string): string[] {
  if (!isObject(step)) return [`type at "${at}"`];
  const errors: string[] = [];
  if (!Object.hasOwn(step, 'name') || !Object.hasOwn(step, 'action')) errors.push(`required at "${at}"`);
  if (!onlyKeys(step, ['name', 'action', 'env'])) errors.push(`additionalProperties at "${at}"`);
  const { name, action, env } = step;
  if (name !== undefined && (typeof name !== 'string' || !STEP_NAME.test(name))) errors.push(`pattern at "${at}/name"`);
  if (action !== undefined && actionMatches(action) !== 1) errors.push(`oneOf at "${at}/action"`);
  if (env !== undefined) {
    if (!isObject(env)) errors.push(`type at "${at}/env"`);
    else {
      for (const key of Object.keys(env)) {
        const variable = env[key];
        if (!ENV_NAME.test(key)) errors.push(`additionalProperties at "${at}/env/${key}"`);
        else if (typeof variable !== 'string' || variable.length > 256) errors.push(`type at "${at}/env/${key}"`);
      }
    }
  }
  return errors;
}

function deployPlanErrors(value: JsonValue): string[] {
  if (!isObject(value)) return ['type at ""'];
  const errors: string[] = [];
  if (!Object.hasOwn(value, 'service') || !Object.hasOwn(value, 'steps')) errors.push('required at ""');
  if (!onlyKeys(value, ['service', 'steps', 'rollback'])) errors.push('additionalProperties at ""');
  const { service, steps, rollback } = value;
  if (service !== undefined && (typeof service !== 'string' || service.length < 1 || service.length > 64)) errors.push('maxLength at "/service"');
  if (rollback !== undefined && typeof rollback !== 'boolean') errors.push('type at "/rollback"');
  if (steps !== undefined) {
    if (!Array.isArray(steps) || steps.length < 1 || steps.length > 20) errors.push('minItems at "/steps"');
    else steps.forEach((step, i) => errors.push(...stepErrors(step, `/steps/${i}`)));
  }
  return errors;
}
