// Tool-argument schemas of two kinds, shared by the guard's schema benchmark and this library's
// fast-path spec, so both judge the very same schemas: an issue tracker's `create_ticket` (flat,
// formats of strings, enums, a nested object) and a deployment's `deploy_plan` ($ref and $defs,
// oneOf and anyOf, patternProperties, multipleOf).
import { type JsonObject } from '@gatehouse/contracts';

/** `create_ticket`: flat properties, patterns, lengths, an enum, a unique array, a closed nested object. */
export const CREATE_TICKET_SCHEMA: JsonObject = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    project: { type: 'string', pattern: '^[A-Z][A-Z0-9]{1,9}$' },
    title: { type: 'string', minLength: 1, maxLength: 200 },
    body: { type: 'string', maxLength: 10_000 },
    priority: { enum: ['low', 'normal', 'high', 'urgent'] },
    labels: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 50 }, maxItems: 10, uniqueItems: true },
    assignee: { type: 'object', properties: { id: { type: 'integer', minimum: 1 }, team: { type: 'string' } }, required: ['id'], additionalProperties: false },
    dueInDays: { type: 'integer', minimum: 0, maximum: 365 },
  },
  required: ['project', 'title', 'priority'],
  additionalProperties: false,
};

// `multipleOf` divisors are exact in binary (0.25, 0.5, 64), so every validator compared divides
// them exactly: a benchmark compares speed, not floating-point policies.
/** `deploy_plan`: steps by `$ref`, an action that is one of three kinds, env names by pattern. */
export const DEPLOY_PLAN_SCHEMA: JsonObject = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    service: { type: 'string', minLength: 1, maxLength: 64 },
    steps: { type: 'array', items: { $ref: '#/$defs/step' }, minItems: 1, maxItems: 20 },
    rollback: { type: 'boolean' },
  },
  required: ['service', 'steps'],
  additionalProperties: false,
  $defs: {
    resources: {
      type: 'object',
      properties: { cpu: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.25 }, memoryMb: { type: 'integer', minimum: 64, multipleOf: 64 } },
      required: ['cpu', 'memoryMb'],
      additionalProperties: false,
    },
    step: {
      type: 'object',
      properties: {
        name: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,39}$' },
        action: { oneOf: [{ $ref: '#/$defs/deploy' }, { $ref: '#/$defs/wait' }, { $ref: '#/$defs/notify' }] },
        env: { type: 'object', patternProperties: { '^[A-Z][A-Z0-9_]*$': { type: 'string', maxLength: 256 } }, additionalProperties: false },
      },
      required: ['name', 'action'],
      additionalProperties: false,
    },
    deploy: {
      type: 'object',
      properties: {
        kind: { const: 'deploy' },
        image: { type: 'string', minLength: 3 },
        replicas: { type: 'integer', minimum: 1, maximum: 50 },
        resources: { $ref: '#/$defs/resources' },
      },
      required: ['kind', 'image', 'replicas'],
      additionalProperties: false,
    },
    wait: {
      type: 'object',
      properties: { kind: { const: 'wait' }, seconds: { type: 'number', minimum: 0, maximum: 3600, multipleOf: 0.5 } },
      required: ['kind', 'seconds'],
      additionalProperties: false,
    },
    notify: {
      type: 'object',
      properties: { kind: { const: 'notify' }, channel: { anyOf: [{ type: 'string', pattern: '^[^@\\s]+@[a-z0-9.-]+$' }, { type: 'string', pattern: '^#[a-z0-9-]+$' }] } },
      required: ['kind', 'channel'],
      additionalProperties: false,
    },
  },
};
