import type { AgentCliDefinition, AgentCliOption } from './argv.js';

const DEFINITION_KEYS: ReadonlySet<string> = new Set(['id', 'command', 'baseArgs', 'options', 'hosts', 'parseOutput']);
// breakwater's definition fields, each refused with what to write instead. `buildFlags` in particular
// is not taken: a function building flags from model input could emit an unbound value or a flag
// the reviewer never saw; declared options bind every value with `=` and check it against a pattern.
const BREAKWATER_FIELDS: Readonly<Record<string, string>> = {
  binary: 'binary is called command here',
  egress: 'egress is called hosts here',
  description: 'the description is fixed by the connector',
  buildFlags: 'buildFlags is not supported: put fixed flags in baseArgs and declare model-settable ones in options (flag, kind, pattern)',
};
const OPTION_KEYS: ReadonlySet<string> = new Set(['flag', 'kind', 'pattern']);

const CLI_ID = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
// A bare executable name: nothing a shell, a path or a flag parser could read differently.
const BARE_COMMAND = /^[A-Za-z0-9_][A-Za-z0-9._+@-]*$/;
// An absolute POSIX path made of the same safe characters. A relative path is refused because it
// would resolve against the workspace, which the agent itself can write.
const ABSOLUTE_COMMAND = /^(?:\/[A-Za-z0-9._+@-]+)+$/;
const OPTION_NAME = /^[a-z][a-zA-Z0-9_]{0,63}$/;
const FLAG = /^--[a-z0-9][a-z0-9-]*$/;
const HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_BASE_ARGS = 64;
const MAX_ARG_LENGTH = 4096;

// Definitions that passed validation; `buildArgv` and `runAgentCli` revalidate anything else.
const defined = new WeakSet<AgentCliDefinition>();

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function fail(what: string): never {
  throw new TypeError(`Invalid agent CLI definition: ${what}`);
}

function checkKeys(value: Record<string, unknown>, allowed: ReadonlySet<string>, where: string): void {
  for (const key of Object.keys(value)) {
    if (allowed.has(key)) continue;
    if (allowed === DEFINITION_KEYS && Object.hasOwn(BREAKWATER_FIELDS, key)) fail(BREAKWATER_FIELDS[key] as string);
    fail(`${where} has an unknown field`);
  }
}

function validCommand(command: string): boolean {
  if (command.length > MAX_ARG_LENGTH) return false;
  if (command.startsWith('/')) return ABSOLUTE_COMMAND.test(command) && !command.split('/').some((s) => s === '.' || s === '..');
  return BARE_COMMAND.test(command);
}

function copyOption(name: string, value: unknown): AgentCliOption {
  if (!OPTION_NAME.test(name)) fail('an option name must be a lowerCamel identifier');
  if (!isRecord(value)) fail(`option ${name} must be an object`);
  checkKeys(value, OPTION_KEYS, `option ${name}`);
  const { flag, kind, pattern } = value;
  if (typeof flag !== 'string' || !FLAG.test(flag)) fail(`option ${name} needs a flag like --name`);
  if (kind !== 'string' && kind !== 'boolean') fail(`option ${name} kind must be 'string' or 'boolean'`);
  if (pattern !== undefined && !(pattern instanceof RegExp)) fail(`option ${name} pattern must be a RegExp`);
  if (pattern !== undefined && kind === 'boolean') fail(`option ${name} is boolean and cannot have a pattern`);
  return Object.freeze({
    flag: flag as `--${string}`,
    kind,
    // A private copy, so later changes to the caller's RegExp (or its lastIndex) cannot reach this definition.
    ...(pattern === undefined ? {} : { pattern: new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '')) }),
  });
}

/**
 * Validates a definition and returns a frozen copy (already-defined definitions are returned as is).
 * Throws TypeError on an unknown field, a bad id, a command with whitespace or shell characters or
 * a relative path, a base arg of `--`, a flag not starting with `--`, a duplicate flag or a bad host.
 */
export function defineAgentCli(definition: AgentCliDefinition): AgentCliDefinition {
  if (defined.has(definition)) return definition;
  if (!isRecord(definition)) fail('must be a plain object');
  checkKeys(definition, DEFINITION_KEYS, 'the definition');
  const { id, command, baseArgs, options, hosts, parseOutput } = definition as unknown as Record<string, unknown>;
  if (parseOutput !== undefined && typeof parseOutput !== 'function') fail('parseOutput must be a function');

  if (typeof id !== 'string' || !CLI_ID.test(id)) fail('id must be lowercase letters, digits, ".", "_" or "-"');
  if (typeof command !== 'string' || !validCommand(command)) fail('command must be an executable name or an absolute path without whitespace or shell characters');

  if (!Array.isArray(baseArgs) || baseArgs.length > MAX_BASE_ARGS) fail(`baseArgs must be an array of at most ${MAX_BASE_ARGS} strings`);
  for (const arg of baseArgs as unknown[]) {
    if (typeof arg !== 'string' || arg === '' || arg.length > MAX_ARG_LENGTH || CONTROL.test(arg)) fail('baseArgs must be non-empty strings without control characters');
    // The runner owns the end-of-options marker; one in baseArgs would turn the options after it into positionals.
    if (arg === '--') fail('baseArgs must not contain "--"');
  }

  if (!isRecord(options)) fail('options must be a plain object');
  const copied: Record<string, AgentCliOption> = {};
  const flags = new Set<string>();
  for (const [name, value] of Object.entries(options)) {
    const option = copyOption(name, value);
    if (flags.has(option.flag)) fail(`option ${name} reuses a flag`);
    // A flag also fixed in baseArgs would make the CLI see two competing values.
    if ((baseArgs as string[]).some((arg) => arg === option.flag || arg.startsWith(`${option.flag}=`))) fail(`option ${name} repeats a flag of baseArgs`);
    flags.add(option.flag);
    copied[name] = option;
  }

  if (!Array.isArray(hosts)) fail('hosts must be an array of host names');
  for (const host of hosts as unknown[]) {
    if (typeof host !== 'string' || !HOST.test(host)) fail('hosts must be lowercase DNS names without scheme or port');
  }
  if (new Set(hosts).size !== hosts.length) fail('hosts must not repeat');

  const frozen: AgentCliDefinition = Object.freeze({
    id,
    command,
    baseArgs: Object.freeze([...(baseArgs as string[])]),
    options: Object.freeze(copied),
    hosts: Object.freeze([...(hosts as string[])]),
    ...(parseOutput === undefined ? {} : { parseOutput: parseOutput as (stdout: string) => string }),
  });
  defined.add(frozen);
  return frozen;
}

// Leading alphanumeric keeps a model id from ever looking like a flag, even though `=` binding already prevents it.
const MODEL_ID = /[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}/;

/**
 * Claude Code's JSON envelope (`--output-format=json`): its `result` when it has a string one, else
 * stdout as it came (an error envelope, or a tail cut by the output cap, is not JSON to unwrap).
 */
export function parseClaudeCodeEnvelope(stdout: string): string {
  let envelope: unknown;
  try {
    envelope = JSON.parse(stdout);
  } catch {
    return stdout;
  }
  const result = envelope !== null && typeof envelope === 'object' && !Array.isArray(envelope) ? (envelope as { result?: unknown }).result : undefined;
  return typeof result === 'string' ? result : stdout;
}

/** Claude Code in headless print mode with its JSON envelope, allowed to edit files in its working directory. */
export const CLAUDE_CODE_CLI: AgentCliDefinition = defineAgentCli({
  id: 'agent-cli.claude-code',
  command: 'claude',
  baseArgs: ['-p', '--permission-mode=acceptEdits', '--output-format=json'],
  options: { model: { flag: '--model', kind: 'string', pattern: MODEL_ID } },
  hosts: ['api.anthropic.com'],
  parseOutput: parseClaudeCodeEnvelope,
});

/** Codex non-interactive exec, sandboxed to writes in its working directory. */
export const CODEX_CLI: AgentCliDefinition = defineAgentCli({
  id: 'agent-cli.codex',
  command: 'codex',
  baseArgs: ['exec', '--sandbox=workspace-write', '--skip-git-repo-check'],
  options: { model: { flag: '--model', kind: 'string', pattern: MODEL_ID } },
  hosts: ['api.openai.com'],
});
