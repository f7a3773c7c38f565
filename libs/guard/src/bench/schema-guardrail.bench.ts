// Validations per second of the schema guardrail on two tool schemas of different kinds
// (schema-bench-cases.ts), next to what a user could pick instead, all measured in the same run
// on the same arguments: a hand-written check, ajv (which generates code with `new Function`)
// and @cfworker/json-schema (an interpreter, like ours). Each must reach the same verdict as the
// guardrail on every argument set before anything is timed. The candidates take turns in
// rounds, so a change in the machine's load falls on all of them alike.
import { type JsonValue } from '@gatehouse/contracts';
import { Validator as CfworkerValidator } from '@cfworker/json-schema';
import { prepareJsonSchema, validateInstance } from '@gatehouse/json-schema';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { peerPackage, recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { createSchemaGuardrail } from '../guardrails/schema-guardrail.js';
import type { GuardrailInput } from '../guardrails/types.js';
import { ARGUMENT_SETS, type SchemaBenchCase, schemaBenchCases } from './schema-bench-cases.js';

const WARM_UP_ROUNDS = 2;
const TIMED_ROUNDS = 7;
// Each candidate runs whole passes for at least this long per round: blocks long enough that
// the garbage a candidate leaves is mostly collected in its own time, not in the next one's.
const ROUND_MS = 60;

/** One way to validate the arguments. */
interface Candidate {
  /** Whether one argument set is valid. */
  readonly verdict: (value: JsonValue) => boolean | Promise<boolean>;
  /** One pass over every argument set: how many are valid. */
  readonly pass: () => number | Promise<number>;
}

function synchronous(argumentSets: readonly JsonValue[], verdict: (value: JsonValue) => boolean): Candidate {
  const pass = (): number => {
    let valid = 0;
    for (const value of argumentSets) if (verdict(value)) valid++;
    return valid;
  };
  return { verdict, pass };
}

type CandidateName = 'guardrail' | 'validator' | 'handWritten' | 'ajvAllErrors' | 'ajvFirstError' | 'cfworker';

/** Runs both schema shapes through every candidate and records the guardrail against each. */
export async function benchSchemaGuardrail(): Promise<void> {
  for (const benchCase of schemaBenchCases()) await benchOneCase(benchCase);
}

async function benchOneCase(benchCase: SchemaBenchCase): Promise<void> {
  const candidates = candidatesFor(benchCase);
  const denied = await checkAgreement(benchCase, candidates);
  const rates = await measure(benchCase.argumentSets.length - denied, candidates);
  record(benchCase, rates);
  const format = (name: CandidateName): string => Math.round(rates[name]).toLocaleString('en');
  const ratio = (name: CandidateName): string => (rates.guardrail / rates[name]).toFixed(3);
  console.log(
    `schema-guardrail ${benchCase.name}: ${format('guardrail')} validations/s (validator alone ${format('validator')}/s); ` +
      `hand-written ${format('handWritten')}/s (ratio ${ratio('handWritten')}), ` +
      `ajv allErrors ${format('ajvAllErrors')}/s (ratio ${ratio('ajvAllErrors')}), ajv first error ${format('ajvFirstError')}/s (ratio ${ratio('ajvFirstError')}), ` +
      `cfworker ${format('cfworker')}/s (ratio ${ratio('cfworker')}); ${benchCase.argumentSets.length} argument sets, ${denied} denied per pass`,
  );
}

function candidatesFor(benchCase: SchemaBenchCase): Record<CandidateName, Candidate> {
  const guardrail = createSchemaGuardrail();
  const signal = new AbortController().signal;
  const sets = benchCase.argumentSets;
  const inputOf = (value: JsonValue): GuardrailInput => ({ placement: 'tool-args', value, tool: { id: benchCase.name, inputSchema: benchCase.schema }, context: {}, signal });
  const inputs = sets.map(inputOf);
  const prepared = prepareJsonSchema(benchCase.schema, { draft: '2020-12' });
  if (!prepared.ok) throw new Error(`schema bench: ${benchCase.name} does not prepare: ${prepared.problem.message}`);
  // ajv as a user checking tool arguments would set it up: the 2020-12 class, formats not
  // involved (neither schema has one), strict mode as shipped.
  const ajvAllErrors = new Ajv2020({ allErrors: true }).compile(benchCase.schema);
  const ajvFirstError = new Ajv2020({ allErrors: false }).compile(benchCase.schema);
  // shortCircuit false: every error is collected, as our guardrail names every failing keyword.
  const cfworker = new CfworkerValidator(benchCase.schema, '2020-12', false);
  return {
    // Awaited, as the guardrail runner awaits it: the wrapper's own cost is part of the figure.
    guardrail: {
      verdict: async (value) => (await guardrail.check(inputOf(value))).action === 'allow',
      pass: async () => {
        let valid = 0;
        for (const input of inputs) if ((await guardrail.check(input)).action === 'allow') valid++;
        return valid;
      },
    },
    validator: synchronous(sets, (value) => validateInstance(prepared.validator, value).outcome === 'valid'),
    handWritten: synchronous(sets, (value) => benchCase.handWrittenErrors(value).length === 0),
    ajvAllErrors: synchronous(sets, (value) => ajvAllErrors(value)),
    ajvFirstError: synchronous(sets, (value) => ajvFirstError(value)),
    cfworker: synchronous(sets, (value) => cfworker.validate(value).valid),
  };
}

// Every candidate must reach the guardrail's verdict on every argument set: a faster validator
// that disagrees measures nothing. Returns how many sets the guardrail denies.
async function checkAgreement(benchCase: SchemaBenchCase, candidates: Record<CandidateName, Candidate>): Promise<number> {
  let denied = 0;
  for (const [index, value] of benchCase.argumentSets.entries()) {
    const expected = await candidates.guardrail.verdict(value);
    if (!expected) denied++;
    if (expected !== (index % 2 === 0)) throw new Error(`schema bench: ${benchCase.name} argument set ${index} should be ${index % 2 === 0 ? 'valid' : 'invalid'}`);
    for (const [name, candidate] of Object.entries(candidates)) {
      if ((await candidate.verdict(value)) !== expected) {
        throw new Error(`schema bench: ${name} disagrees with the guardrail on ${benchCase.name} argument set ${index}`);
      }
    }
  }
  return denied;
}

// Rounds in which each candidate, in turn, runs whole passes for ROUND_MS or more. A
// candidate's rate is the median of its rounds' rates: a burst of load from elsewhere on the
// machine spoils a round or two, not the figure. Each pass must count `validCount` valid sets,
// which also keeps its work from being dropped.
async function measure(validCount: number, candidates: Record<CandidateName, Candidate>): Promise<Record<CandidateName, number>> {
  const names = Object.keys(candidates) as CandidateName[];
  const rates = new Map<CandidateName, number[]>(names.map((name) => [name, []]));
  for (let round = 0; round < WARM_UP_ROUNDS + TIMED_ROUNDS; round++) {
    for (const name of names) {
      const start = performance.now();
      let passes = 0;
      do {
        if ((await candidates[name].pass()) !== validCount) throw new Error(`schema bench: ${name} counted a different number of valid sets`);
        passes++;
      } while (performance.now() - start < ROUND_MS);
      if (round >= WARM_UP_ROUNDS) rates.get(name)!.push((ARGUMENT_SETS * passes) / ((performance.now() - start) / 1000));
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(rates.get(name)!)])) as Record<CandidateName, number>;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function record(benchCase: SchemaBenchCase, rates: Record<CandidateName, number>): void {
  const common = {
    benchmark: 'guard: JSON Schema guardrail',
    source: 'libs/guard/src/bench/schema-guardrail.bench.ts',
    case: `${benchCase.name} schema, ${ARGUMENT_SETS.toLocaleString('en')} argument sets (half invalid)`,
    metric: 'validations per second',
    unit: 'validations/s',
    value: rates.guardrail,
  } as const;
  recordBenchFigure({ ...common, baseline: 'a hand-written validator of the same schema (checked to deny as many)', baselineValue: rates.handWritten });
  recordBenchFigure({
    ...common,
    baseline: 'ajv (generates code), same schema and arguments, checked to agree',
    baselineValue: rates.ajvAllErrors,
    peer: peerPackage('ajv'),
    target: { on: 'ratio', atLeast: 0.5, source: 'issue 22: ≥ 0.5x ajv without code generation' },
    note: 'ajv with allErrors: true (every failing keyword, as the guardrail reports them); the guardrail awaited as its runner awaits it',
  });
  recordBenchFigure({
    ...common,
    baseline: 'ajv (generates code), first error only, same schema and arguments, checked to agree',
    baselineValue: rates.ajvFirstError,
    peer: peerPackage('ajv'),
    note: 'ajv with allErrors: false (stops at the first failing keyword; the guardrail still names every one)',
  });
  recordBenchFigure({
    ...common,
    baseline: '@cfworker/json-schema (an interpreter), same schema and arguments, checked to agree',
    baselineValue: rates.cfworker,
    peer: peerPackage('@cfworker/json-schema'),
    target: { on: 'ratio', atLeast: 1, source: 'issue 22: no slower than another interpreter' },
    note: 'cfworker with shortCircuit: false (every error collected)',
  });
  recordBenchFigure({
    ...common,
    metric: 'validations per second, validateInstance alone (no guardrail wrapper)',
    value: rates.validator,
    baseline: 'ajv (generates code), same schema and arguments, checked to agree',
    baselineValue: rates.ajvAllErrors,
    peer: peerPackage('ajv'),
    note: 'ajv with allErrors: true; @gatehouse/json-schema validateInstance called directly, as the approval service does',
  });
}
