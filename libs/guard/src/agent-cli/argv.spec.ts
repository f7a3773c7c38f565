import { describe, expect, it } from '@jest/globals';
import { inspect } from 'node:util';
import { type AgentCliDefinition, buildArgv, MAX_PROMPT_BYTES, redactCommand } from './argv.js';
import { defineAgentCli } from './definitions.js';
import { AgentCliError } from './errors.js';

const CLI = defineAgentCli({
  id: 'agent-cli.test',
  command: 'agent',
  baseArgs: ['run', '--mode=edit'],
  options: {
    model: { flag: '--model', kind: 'string', pattern: /[a-z0-9.-]+/ },
    verbose: { flag: '--verbose', kind: 'boolean' },
    effort: { flag: '--effort', kind: 'string' },
  },
  hosts: ['api.example.com'],
});

function refusal(run: () => unknown): AgentCliError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentCliError);
    const e = error as AgentCliError;
    expect(e.code).toBe('AGENT_CLI.INPUT_INVALID');
    return e;
  }
  throw new Error('expected buildArgv to refuse the input');
}

describe('buildArgv', () => {
  it('places base args, options in definition order, "--" and the prompt last', () => {
    const argv = buildArgv(CLI, { prompt: 'Add unit tests.', options: { verbose: true, effort: 'high', model: 'm-1' } });
    expect(argv).toEqual(['run', '--mode=edit', '--model=m-1', '--verbose', '--effort=high', '--', 'Add unit tests.']);
    expect(Object.isFrozen(argv)).toBe(true);
  });

  it('keeps a prompt that looks like a flag as the single final positional element', () => {
    const argv = buildArgv(CLI, { prompt: '--dangerously-skip-permissions' });
    expect(argv.slice(-2)).toEqual(['--', '--dangerously-skip-permissions']);
    expect(argv.filter((arg) => arg === '--dangerously-skip-permissions')).toHaveLength(1);
  });

  it('keeps a prompt with newlines and quotes as one element, unchanged', () => {
    const prompt = `line one\nit's "quoted" $(rm -rf /) \`x\`\n-- --model=evil`;
    const argv = buildArgv(CLI, { prompt });
    expect(argv.at(-1)).toBe(prompt);
    expect(argv).toHaveLength(CLI.baseArgs.length + 2);
  });

  it('binds a string value with "=" so a value starting with "-" stays a value', () => {
    const argv = buildArgv(CLI, { prompt: 'p', options: { effort: '--dangerously-skip-permissions' } });
    expect(argv).toContain('--effort=--dangerously-skip-permissions');
    expect(argv).not.toContain('--dangerously-skip-permissions');
  });

  it('adds a boolean flag only when true and skips undefined values', () => {
    expect(buildArgv(CLI, { prompt: 'p', options: { verbose: false } })).toEqual(['run', '--mode=edit', '--', 'p']);
    expect(buildArgv(CLI, { prompt: 'p', options: { model: undefined as unknown as string } })).toEqual(['run', '--mode=edit', '--', 'p']);
  });

  it('refuses an unknown option without echoing its name or value', () => {
    const error = refusal(() => buildArgv(CLI, { prompt: 'p', options: { 'secret-flag-name': 'secret-value' } }));
    expect(error.metadata).toEqual({ cliId: 'agent-cli.test', reason: 'unknown-option' });
    expect(inspect(error)).not.toMatch(/secret/);
  });

  it('treats inherited property names as unknown options', () => {
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: JSON.parse('{"__proto__": "x"}') as Record<string, string> })).metadata.reason).toBe('unknown-option');
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: { toString: 'x' } })).metadata.reason).toBe('unknown-option');
  });

  it('refuses a value failing its pattern, matching the whole value, and names only the declared option', () => {
    const error = refusal(() => buildArgv(CLI, { prompt: 'p', options: { model: 'ok but SECRET' } }));
    expect(error.metadata).toEqual({ cliId: 'agent-cli.test', reason: 'option-pattern', option: 'model' });
    expect(inspect(error)).not.toMatch(/SECRET/);
    // The pattern has no anchors: a partial match must still be refused.
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: { model: 'Xm-1' } })).metadata.reason).toBe('option-pattern');
  });

  it('does not let a global pattern carry state between calls', () => {
    const cli = defineAgentCli({ id: 'agent-cli.g', command: 'agent', baseArgs: [], options: { model: { flag: '--model', kind: 'string', pattern: /[a-z]+/g } }, hosts: [] });
    for (let i = 0; i < 3; i += 1) expect(buildArgv(cli, { prompt: 'p', options: { model: 'abc' } })).toContain('--model=abc');
  });

  it('refuses a value of the wrong type', () => {
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: { verbose: 'yes' } })).metadata).toEqual({ cliId: 'agent-cli.test', reason: 'option-type', option: 'verbose' });
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: { model: true } })).metadata.reason).toBe('option-type');
  });

  it('refuses NUL bytes in the prompt and in option values', () => {
    expect(refusal(() => buildArgv(CLI, { prompt: 'a\0b' })).metadata.reason).toBe('nul-byte');
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: { effort: 'a\0b' } })).metadata).toEqual({ cliId: 'agent-cli.test', reason: 'nul-byte', option: 'effort' });
  });

  it('refuses an empty or blank prompt and a missing one', () => {
    expect(refusal(() => buildArgv(CLI, { prompt: '' })).metadata.reason).toBe('prompt-empty');
    expect(refusal(() => buildArgv(CLI, { prompt: ' \n\t' })).metadata.reason).toBe('prompt-empty');
    expect(refusal(() => buildArgv(CLI, {} as never)).metadata.reason).toBe('prompt-missing');
    expect(refusal(() => buildArgv(CLI, null as never)).metadata.reason).toBe('input-invalid');
  });

  it('refuses a prompt over the argv element limit counted in UTF-8 bytes, and accepts exactly the limit', () => {
    expect(buildArgv(CLI, { prompt: 'a'.repeat(MAX_PROMPT_BYTES) }).at(-1)).toHaveLength(MAX_PROMPT_BYTES);
    // 600 000 characters but 1 200 000 bytes.
    expect(refusal(() => buildArgv(CLI, { prompt: 'é'.repeat(600_000) })).metadata.reason).toBe('prompt-too-large');
  });

  it('refuses non-object options', () => {
    expect(refusal(() => buildArgv(CLI, { prompt: 'p', options: ['x'] as never })).metadata.reason).toBe('options-invalid');
  });

  it('validates a definition that was not passed through defineAgentCli', () => {
    const raw = { id: 'agent-cli.raw', command: 'agent', baseArgs: ['--'], options: {}, hosts: [] } as AgentCliDefinition;
    expect(() => buildArgv(raw, { prompt: 'p' })).toThrow(TypeError);
  });
});

describe('redactCommand', () => {
  it('hides the prompt and every bound option value', () => {
    const argv = buildArgv(CLI, { prompt: 'top secret task', options: { model: 'private-model', verbose: true } });
    const shown = redactCommand(CLI.command, argv);
    expect(shown).toBe('agent run --mode=<redacted> --model=<redacted> --verbose -- <prompt>');
    expect(shown).not.toMatch(/secret|private/);
  });

  it('shell-quotes other elements for display', () => {
    expect(redactCommand('/opt/my agent/bin', ['it\'s', 'a\nb', '--', 'p'])).toBe(`'/opt/my agent/bin' 'it'\\''s' $'a\\x0ab' -- <prompt>`);
  });

  it('treats the final element as the prompt when there is no "--"', () => {
    expect(redactCommand('agent', ['run', 'secret prompt'])).toBe('agent run <prompt>');
  });
});
