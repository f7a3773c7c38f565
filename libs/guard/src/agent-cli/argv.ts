import { defineAgentCli } from './definitions.js';
import { AgentCliError, type AgentCliFailureReason } from './errors.js';

/** A model-visible option of an agent CLI, such as `model`. */
export interface AgentCliOption {
  readonly flag: `--${string}`;
  readonly kind: 'string' | 'boolean';
  /** Whole-value pattern for a string option (anchored when applied). */
  readonly pattern?: RegExp;
}

/** How to invoke one non-interactive agent CLI. Validate and freeze it with `defineAgentCli`. */
export interface AgentCliDefinition {
  /** Stable id, e.g. `agent-cli.claude-code`; appears in error metadata. */
  readonly id: string;
  /** Executable name (looked up on the child's PATH) or absolute path. */
  readonly command: string;
  /** Subcommands and fixed flags, placed first. Never the prompt. */
  readonly baseArgs: readonly string[];
  /** Options a caller may set, in the order they are emitted. */
  readonly options: Readonly<Record<string, AgentCliOption>>;
  /** Provider hosts the CLI contacts. A declaration only: the child's sockets are not gated here. */
  readonly hosts: readonly string[];
  /**
   * Turns a successful run's stdout into the connector's `text` (default: stdout as is). A throw or
   * a result that is not a string is `AGENT_CLI.OUTPUT_PARSE_FAILED`; the output is never in the error.
   */
  readonly parseOutput?: (stdout: string) => string;
}

/** One request to an agent CLI: the prompt and values of declared options. */
export interface AgentCliInput {
  readonly prompt: string;
  readonly options?: Readonly<Record<string, string | boolean>>;
}

/**
 * Largest prompt accepted, in UTF-8 bytes: Linux caps one argv element at 128 KiB
 * (MAX_ARG_STRLEN, including its NUL), so a larger prompt could only fail at spawn.
 */
export const MAX_PROMPT_BYTES = 128 * 1024 - 1;

/** Largest string option value accepted, in UTF-8 bytes. */
export const MAX_OPTION_VALUE_BYTES = 4096;

/** Separator after which the CLI treats every element as positional. */
const END_OF_OPTIONS = '--';

function refuse(reason: AgentCliFailureReason, cliId: string, option?: string): never {
  throw new AgentCliError('AGENT_CLI.INPUT_INVALID', option === undefined ? { cliId, reason } : { cliId, reason, option });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// Bytes are never fewer than UTF-16 units, so the length test settles huge strings without encoding them.
const tooLarge = (value: string, max: number): boolean => value.length > max || Buffer.byteLength(value, 'utf8') > max;

function matchesWhole(pattern: RegExp, value: string): boolean {
  // A fresh anchored copy: an unanchored pattern must not pass on a partial match, and a
  // global or sticky pattern must not carry `lastIndex` from one call to the next.
  const flags = pattern.flags.replace(/[gmy]/g, '');
  return new RegExp(`^(?:${pattern.source})$`, flags).test(value);
}

/**
 * Builds the argv: base args, declared options in definition order, `--`, then the prompt once as
 * the final element. Throws AgentCliError `AGENT_CLI.INPUT_INVALID` (no value echoed) on bad input.
 */
export function buildArgv(definition: AgentCliDefinition, input: AgentCliInput): readonly string[] {
  const cli = defineAgentCli(definition);
  if (!isRecord(input)) refuse('input-invalid', cli.id);
  const prompt: unknown = input['prompt'];
  if (typeof prompt !== 'string') refuse('prompt-missing', cli.id);
  if (prompt.trim() === '') refuse('prompt-empty', cli.id);
  if (tooLarge(prompt, MAX_PROMPT_BYTES)) refuse('prompt-too-large', cli.id);
  // execve cannot carry a NUL, and Node's own refusal would quote the argument.
  if (prompt.includes('\0')) refuse('nul-byte', cli.id);

  const supplied: unknown = input['options'] ?? {};
  if (!isRecord(supplied)) refuse('options-invalid', cli.id);
  for (const name of Object.keys(supplied)) {
    // The name is caller input too, so it is not echoed.
    if (!Object.hasOwn(cli.options, name)) refuse('unknown-option', cli.id);
  }

  const argv = [...cli.baseArgs];
  for (const [name, option] of Object.entries(cli.options)) {
    const value = supplied[name];
    if (value === undefined) continue;
    if (option.kind === 'boolean') {
      if (typeof value !== 'boolean') refuse('option-type', cli.id, name);
      if (value) argv.push(option.flag);
      continue;
    }
    if (typeof value !== 'string') refuse('option-type', cli.id, name);
    if (value.includes('\0')) refuse('nul-byte', cli.id, name);
    if (tooLarge(value, MAX_OPTION_VALUE_BYTES)) refuse('option-too-large', cli.id, name);
    if (option.pattern !== undefined && !matchesWhole(option.pattern, value)) refuse('option-pattern', cli.id, name);
    // Bound with `=` so a value beginning with '-' stays this flag's value and never becomes a flag.
    argv.push(`${option.flag}=${value}`);
  }
  argv.push(END_OF_OPTIONS, prompt);
  return Object.freeze(argv);
}

const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;
const BOUND_FLAG = /^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)=/;

function quoteForDisplay(arg: string): string {
  if (PLAIN.test(arg)) return arg;
  // ANSI-C quoting keeps control characters visible instead of breaking the display line.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(arg)) {
    // eslint-disable-next-line no-control-regex
    const body = arg.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
    return `$'${body}'`;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * A display-only rendering of a command line: elements after `--` become `<prompt>` (without `--`,
 * the final element is taken to be the prompt) and every `--flag=value` becomes `--flag=<redacted>`.
 */
export function redactCommand(command: string, argv: readonly string[]): string {
  const separator = argv.indexOf(END_OF_OPTIONS);
  const parts = argv.map((arg, index) => {
    if (separator === -1 ? index === argv.length - 1 : index > separator) return '<prompt>';
    const bound = BOUND_FLAG.exec(arg);
    if (bound?.[1] !== undefined) return `${bound[1]}=<redacted>`;
    return quoteForDisplay(arg);
  });
  return [quoteForDisplay(command), ...parts].join(' ');
}
