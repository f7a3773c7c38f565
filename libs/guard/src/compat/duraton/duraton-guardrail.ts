// Duraton's guardrail shape over gatehouse's port (no second runner): a Duraton guardrail reads the
// tool as a name and its input schema as `schema`, and may answer `{ rule, detected }` detections and
// outcome `failed`, which the runner itself understands. What Duraton's shape cannot carry into a
// record stays out, as for any guardrail: detection names only when declared, reasons only as codes.
import { type JsonValue } from '@gatehouse/contracts';
import { guardrailByName } from '../../guardrails/registry.js';
import {
  type Guardrail,
  type GuardrailAction,
  type GuardrailDetectionReport,
  type GuardrailInput,
  type GuardrailOutcome,
  type GuardrailPlacement,
  type GuardrailVerdict,
} from '../../guardrails/types.js';

/** What a Duraton guardrail is asked: the tool as a name, with its input schema beside it. */
export interface DuratonGuardrailInput {
  readonly placement: GuardrailPlacement;
  readonly value: JsonValue;
  /** The tool's name, at tool placements. */
  readonly tool?: string;
  /** The tool's input JSON Schema, when it declares one. */
  readonly schema?: Readonly<Record<string, JsonValue>>;
  /** Trusted identity (gatehouse's: agent, tenant, actor, run), never from the value. */
  readonly context: GuardrailInput['context'];
  readonly signal: AbortSignal;
}

/** A Duraton verdict: detections as names or `{ rule, detected }`; outcome `complete`, `partial` or `failed`. */
export interface DuratonVerdict {
  readonly action: GuardrailAction;
  readonly outcome: GuardrailOutcome;
  readonly detections: readonly GuardrailDetectionReport[];
  /** Free text is accepted and dropped; a code of `GUARDRAIL_REASONS` is shown. */
  readonly reason?: string;
  readonly payload?: JsonValue;
}

/** A guardrail written for Duraton. `detections` (optional) declares the rule names it may report. */
export interface DuratonGuardrail {
  readonly name: string;
  readonly placements: readonly GuardrailPlacement[];
  readonly detections?: readonly string[];
  check(input: DuratonGuardrailInput): DuratonVerdict | Promise<DuratonVerdict>;
}

/**
 * A Duraton guardrail as a gatehouse one: it is asked with `tool` as the tool's name and `schema` as
 * its input schema, and its answer goes to the runner as given (which reads `{ rule, detected }` and
 * `failed`). Without the wrapper a guardrail gets gatehouse's `tool` object, so a comparison such as
 * `tool === "send-email"` would never match. Declare the rule names it reports in `detections`, or
 * the records name each one only as `undeclared`.
 */
export function duratonGuardrail(guardrail: DuratonGuardrail): Guardrail {
  const candidate = guardrail as Partial<DuratonGuardrail> | null;
  if (candidate === null || typeof candidate !== 'object' || typeof candidate.name !== 'string' || typeof candidate.check !== 'function' || !Array.isArray(candidate.placements)) {
    throw new TypeError('duratonGuardrail: a guardrail needs a name, placements and a check function');
  }
  const check = candidate.check.bind(candidate);
  return Object.freeze({
    name: candidate.name,
    placements: Object.freeze([...candidate.placements]),
    // Read through, so a declaration the guardrail changes is the one the runner sees (and validates).
    get detections() {
      return candidate.detections;
    },
    check({ placement, value, tool, context, signal }: GuardrailInput): GuardrailVerdict | Promise<GuardrailVerdict> {
      const asked: DuratonGuardrailInput = {
        placement,
        value,
        ...(tool ? { tool: tool.id } : {}),
        ...(tool?.inputSchema ? { schema: tool.inputSchema } : {}),
        context,
        signal,
      };
      // The runner validates what comes back (it reads `{ rule, detected }` and outcome `failed`).
      return check(asked) as GuardrailVerdict | Promise<GuardrailVerdict>;
    },
  }) as Guardrail;
}

/**
 * Duraton's `getGuardrail(name, options)`: the same lookup as `guardrailByName` (`schema`, `pii`,
 * `moderation`, and any registered). `moderation` without a classifier faults on every check.
 */
export function getGuardrail(name: string, options?: unknown): Guardrail {
  return guardrailByName(name, options);
}
