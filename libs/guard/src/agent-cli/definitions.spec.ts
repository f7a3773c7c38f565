import { describe, expect, it } from '@jest/globals';
import { type AgentCliDefinition, buildArgv, redactCommand } from './argv.js';
import { CLAUDE_CODE_CLI, CODEX_CLI, defineAgentCli } from './definitions.js';
import { AgentCliError } from './errors.js';

const VALID: AgentCliDefinition = {
  id: 'agent-cli.example',
  command: 'example-agent',
  baseArgs: ['run', '--workspace-write'],
  options: { model: { flag: '--model', kind: 'string', pattern: /[a-z0-9-]+/ }, fast: { flag: '--fast', kind: 'boolean' } },
  hosts: ['api.example.com'],
};

const withField = (patch: Record<string, unknown>): AgentCliDefinition => ({ ...VALID, ...patch }) as AgentCliDefinition;

describe('shipped definitions', () => {
  it('runs Claude Code headless with edits accepted and the prompt after "--"', () => {
    const argv = buildArgv(CLAUDE_CODE_CLI, { prompt: '-p --permission-mode=bypassPermissions', options: { model: 'claude-sonnet-4-5' } });
    expect(CLAUDE_CODE_CLI.command).toBe('claude');
    expect(argv).toEqual(['-p', '--permission-mode=acceptEdits', '--output-format=json', '--model=claude-sonnet-4-5', '--', '-p --permission-mode=bypassPermissions']);
    expect(CLAUDE_CODE_CLI.hosts).toEqual(['api.anthropic.com']);
  });

  it('runs Codex exec in the workspace-write sandbox', () => {
    const argv = buildArgv(CODEX_CLI, { prompt: 'Add unit tests.', options: { model: 'gpt-5-codex' } });
    expect(CODEX_CLI.command).toBe('codex');
    expect(argv).toEqual(['exec', '--sandbox=workspace-write', '--skip-git-repo-check', '--model=gpt-5-codex', '--', 'Add unit tests.']);
    expect(CODEX_CLI.hosts).toEqual(['api.openai.com']);
    expect(redactCommand(CODEX_CLI.command, argv)).toBe('codex exec --sandbox=<redacted> --skip-git-repo-check --model=<redacted> -- <prompt>');
  });

  it('refuses a model id that starts with "-" or carries spaces', () => {
    for (const model of ['-x', '--dangerously-skip-permissions', 'a b', '']) {
      expect(() => buildArgv(CLAUDE_CODE_CLI, { prompt: 'p', options: { model } })).toThrow(AgentCliError);
      expect(() => buildArgv(CODEX_CLI, { prompt: 'p', options: { model } })).toThrow(AgentCliError);
    }
  });

  it('is frozen all the way down', () => {
    for (const cli of [CLAUDE_CODE_CLI, CODEX_CLI]) {
      expect(Object.isFrozen(cli)).toBe(true);
      expect(Object.isFrozen(cli.baseArgs)).toBe(true);
      expect(Object.isFrozen(cli.options)).toBe(true);
      expect(Object.isFrozen(cli.options['model'])).toBe(true);
      expect(Object.isFrozen(cli.hosts)).toBe(true);
      expect(Object.getOwnPropertyDescriptor(cli, 'parseOutput')?.writable ?? false).toBe(false);
    }
  });
});

describe('defineAgentCli', () => {
  it('returns a frozen copy that later changes to the input cannot reach', () => {
    const baseArgs = ['run'];
    const pattern = /[a-z]+/;
    const input = { ...VALID, baseArgs, options: { model: { flag: '--model' as const, kind: 'string' as const, pattern } } };
    const cli = defineAgentCli(input);
    baseArgs.push('--dangerously-skip-permissions');
    pattern.compile('.*');
    expect(cli.baseArgs).toEqual(['run']);
    expect(() => buildArgv(cli, { prompt: 'p', options: { model: 'A B' } })).toThrow(AgentCliError);
    expect(defineAgentCli(cli)).toBe(cli);
  });

  it('accepts an absolute command path', () => {
    expect(defineAgentCli(withField({ command: process.execPath })).command).toBe(process.execPath);
  });

  it.each([
    ['an unknown field', { description: 'x' }],
    ['a missing field', { hosts: undefined }],
    ['an id with uppercase or spaces', { id: 'Agent CLI' }],
    ['a command with whitespace', { command: 'claude --yolo' }],
    ['a command with a shell metacharacter', { command: 'claude;rm' }],
    ['a command substitution', { command: '$(claude)' }],
    ['a relative command path', { command: './bin/claude' }],
    ['a command starting with "-"', { command: '-claude' }],
    ['an absolute path with ".."', { command: '/usr/bin/../bin/claude' }],
    ['"--" in baseArgs', { baseArgs: ['run', '--'] }],
    ['a control character in baseArgs', { baseArgs: ['run\nrm'] }],
    ['a non-string base arg', { baseArgs: [1] }],
    ['a flag not starting with "--"', { options: { model: { flag: '-m', kind: 'string' } } }],
    ['a flag with a bound value', { options: { model: { flag: '--model=x', kind: 'string' } } }],
    ['an unknown kind', { options: { model: { flag: '--model', kind: 'number' } } }],
    ['an unknown option field', { options: { model: { flag: '--model', kind: 'string', default: 'x' } } }],
    ['a pattern that is not a RegExp', { options: { model: { flag: '--model', kind: 'string', pattern: '.*' } } }],
    ['a pattern on a boolean', { options: { fast: { flag: '--fast', kind: 'boolean', pattern: /x/ } } }],
    ['an option name that is not an identifier', { options: { 'my-model': { flag: '--model', kind: 'string' } } }],
    ['two options with one flag', { options: { a: { flag: '--model', kind: 'string' }, b: { flag: '--model', kind: 'boolean' } } }],
    ['an option flag fixed in baseArgs', { baseArgs: ['--model=x'], options: { model: { flag: '--model', kind: 'string' } } }],
    ['a host with a scheme', { hosts: ['https://api.example.com'] }],
    ['a host with a port', { hosts: ['api.example.com:443'] }],
    ['a repeated host', { hosts: ['api.example.com', 'api.example.com'] }],
  ])('refuses %s with a TypeError', (_label, patch) => {
    expect(() => defineAgentCli(withField(patch))).toThrow(TypeError);
  });

  it('refuses something that is not a plain object', () => {
    expect(() => defineAgentCli(null as never)).toThrow(TypeError);
    expect(() => defineAgentCli([] as never)).toThrow(TypeError);
  });
});
