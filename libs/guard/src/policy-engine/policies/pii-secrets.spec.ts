import { describe, expect, it } from '@jest/globals';
import { judge } from './judge.testing.js';
import { PII_SECRETS_DETECTOR_IDS, piiSecrets, type PiiSecretsDetectorId, type PiiSecretsOptions } from './pii-secrets.js';


/** Whether the one detector `id` (alone, so others cannot mask a miss) fires on `text`. */
async function fires(id: PiiSecretsDetectorId, text: string, options: Omit<PiiSecretsOptions, 'detectors'> = {}) {
  return !(await judge(piiSecrets({ ...options, detectors: [id] }), text)).allowed;
}

// Published documentation examples and test numbers, not live credentials.
const AWS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const RANDOM_KEY = 'q8Zr2LmX9vT4pN7sK1wY6bH3dF5gJ0cE';

describe('piiSecrets', () => {
  describe('email', () => {
    it.each(['write to jane.doe+news@example.co.uk today', 'ops@acme-corp.io', '<a href="mailto:x.y@z.dev">'])(
      'detects %s',
      async (text) => expect(await fires('email', text)).toBe(true),
    );
    it.each(['user@localhost is the default', 'postgres://app@db.example.com:5432/app', '@Component({ selector })', 'npm i @nx/eslint-plugin', 'a @ b.com'])(
      'ignores %s',
      async (text) => expect(await fires('email', text)).toBe(false),
    );
  });

  describe('ssn', () => {
    it.each(['SSN 123-45-6789', 'ssn: 123 45 6789', '(078-05-1120)'])('detects %s', async (text) =>
      expect(await fires('ssn', text)).toBe(true),
    );
    it.each([
      ['area 000', '000-45-6789'],
      ['area 666', '666-45-6789'],
      ['area 9xx', '923-45-6789'],
      ['group 00', '123-00-6789'],
      ['serial 0000', '123-45-0000'],
      ['a bare nine-digit number', '123456789'],
      ['mixed separators', '123-45 6789'],
      ['part of a longer number', '9123-45-67890'],
      ['a date', '2024-01-15'],
    ])('ignores %s', async (_label, text) => expect(await fires('ssn', text)).toBe(false));
  });

  describe('phone', () => {
    it.each(['call (212) 555-0123', '212-555-0123', '212.555.0123', '+1 212 555 0123', '1-800-555-0199', '+44 20 7946 0958', '+12125550123'])(
      'detects %s',
      async (text) => expect(await fires('phone', text)).toBe(true),
    );
    it.each([
      ['a card number', '4111 1111 1111 1111'],
      ['a bare card number', '4111111111111111'],
      ['a bare ten-digit id', 'order 2125550123'],
      ['a date and time', '2024-01-15 12:30:45'],
      ['an IP address', '192.168.100.200'],
      ['a version string', 'v1.22.333'],
      ['a number inside a longer dashed run', '1234-212-555-0123-99'],
    ])('ignores %s', async (_label, text) => expect(await fires('phone', text)).toBe(false));
  });

  describe('creditCard', () => {
    it.each([
      ['a plain Visa test number', 'card 4111111111111111'],
      ['a spaced number', '4111 1111 1111 1111'],
      ['a dashed number', '5555-5555-5555-4444'],
      ['a 15-digit Amex number', 'amex 3782 822463 10005'],
      ['a Mastercard 2-series number', '2221000000000009'],
      ['a number followed by its expiry date', '4111 1111 1111 1111 12/27 cvv 123'],
      ['full-width digits', 'card ４１１１１１１１１１１１１１１１'],
      // A card and its four-digit Amex CID or MMYY expiry: no different from a card and a CVV.
      ['a number followed by another four-digit group', '4111 1111 1111 1111 2222'],
    ])('detects %s', async (_label, text) => expect(await fires('creditCard', text)).toBe(true));
    it.each([
      ['a 16-digit number that fails the Luhn check', '4111111111111112'],
      ['a Luhn-valid millisecond timestamp', '"ts": 1718000000121'],
      ['a Luhn-valid run of years', 'revenue 2023 2024 2025 2026'],
      ['the digits of a decimal fraction', 'pi is 0.4111111111111111'],
      ['a 22-digit id', '4111111111111111111111'],
      ['a UUID', '550e8400-e29b-41d4-a716-446655440000'],
      ['a run of small numbers with a Luhn-valid stretch', 'scores 36 18 33 60 41 32 53 55 5 60 13'],
      ['a run of ISO dates', 'on 2024-03-15 2024-03-16 2024-03-17 and later'],
    ])('ignores %s', async (_label, text) => expect(await fires('creditCard', text)).toBe(false));
  });

  // Issue 16, item 5: a number beside a card or a phone number in the same run once hid it.
  describe('numbers beside other numbers', () => {
    it.each([
      ['denies a card number followed by its CVV', 'creditCard', '4111 1111 1111 1111 123'],
      ['denies a card number followed by its expiry', 'creditCard', '4111111111111111 12/27'],
      ['denies a dashed card number, its expiry and CVV', 'creditCard', '4111-1111-1111-1111 exp 12/27 cvv 123'],
      ['denies a card number after a quantity', 'creditCard', '2 4111 1111 1111 1111'],
      ['denies a card number after an item number', 'creditCard', 'item 42 4111111111111111'],
      ['denies a card number after a quantity and a comma', 'creditCard', 'qty 3, 5500 0000 0000 0004'],
      ['denies an E.164 number after a short number', 'phone', 'call 2 +1 415 555 2671'],
      ['denies a North-American number after a room number', 'phone', 'room 12 (415) 555-2671'],
    ] as const)('%s', async (_label, id, text) => {
      expect(await judge(piiSecrets({ detectors: [id] }), text)).toEqual({ allowed: false, detections: [id] });
    });

    it('still ignores a card-like stretch inside a run written unlike a card', async () => {
      // The run holds a Luhn-valid stretch of 13-19 digits starting with 3, in groups of two.
      expect(await fires('creditCard', 'scores 36 18 33 60 41 32 53 55 5 60 13')).toBe(false);
    });
  });

  describe('awsAccessKey', () => {
    it.each([AWS_KEY_ID, 'ASIAY34FZKBOKMUTVV7A', `key="${AWS_KEY_ID}"`])('detects %s', async (text) =>
      expect(await fires('awsAccessKey', text)).toBe(true),
    );
    it.each([
      ['lower case', AWS_KEY_ID.toLowerCase()],
      ['an id inside a longer token', `X${AWS_KEY_ID}`],
      ['an unknown prefix', 'AKIBIOSFODNN7EXAMPLE'],
      ['a short suffix', 'AKIAIOSFODNN7EXAMPL'],
    ])('ignores %s', async (_label, text) => expect(await fires('awsAccessKey', text)).toBe(false));
  });

  describe('privateKey', () => {
    it.each(['RSA ', 'EC ', 'DSA ', 'OPENSSH ', 'ENCRYPTED ', ''])('detects a %sPRIVATE KEY header', async (kind) =>
      expect(await fires('privateKey', `-----BEGIN ${kind}PRIVATE KEY-----\nMIIEvQIBADANBg...`)).toBe(true),
    );
    it.each(['-----BEGIN PUBLIC KEY-----', '-----BEGIN CERTIFICATE-----', 'keep your private key safe'])(
      'ignores %s',
      async (text) => expect(await fires('privateKey', text)).toBe(false),
    );
  });

  describe('jwt', () => {
    it('detects a signed token', async () => expect(await fires('jwt', `Bearer ${JWT}`)).toBe(true));
    it('detects an unsigned token with an empty signature', async () =>
      expect(await fires('jwt', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.')).toBe(true));
    it.each([
      ['a lone header', 'eyJhbGciOiJIUzI1NiJ9'],
      ['two segments', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0'],
      ['a payload that is not JSON', 'eyJhbGciOiJIUzI1NiJ9.abc.def'],
    ])('ignores %s', async (_label, text) => expect(await fires('jwt', text)).toBe(false));
  });

  describe('secretAssignment', () => {
    it.each([
      'api_key=sk_live_51Habc',
      'apiKey: "hunter22"',
      '"client_secret": "0a1b2c3d4e"',
      'password: correct-horse',
      'token=ghp_abcdef123',
      "access_key = 'abcdef12'",
      'AUTH_TOKEN=xoxb-1234-5678',
      'export AWS_SECRET_ACCESS_KEY=abcdefgh',
      'aws_access_key_id: AKIAEXAMPLE',
      'db_password := "s3cr3t!!"',
      "'secret' => 'opensesame'",
      'const token = `tok_abcdef12`;',
      'password: "passwordFile"',
      'api_key=xSq0IIdppWpp',
    ])('detects %s', async (text) => expect(await fires('secretAssignment', text)).toBe(true));
    it.each([
      ['a value under six characters', 'password: abc12'],
      ['a plural key', 'max_tokens = 100000'],
      ['a type annotation', 'password: string;'],
      ['a function call', 'const token = getToken(user);'],
      ['a property read', 'apiKey: config.openai.apiKey,'],
      ['an environment reference', 'apiKey: process.env.OPENAI_API_KEY'],
      ['a template placeholder', 'api_key=${API_KEY}'],
      ['a shell variable', 'DB_PASSWORD=$DB_PASSWORD'],
      ['a mask', 'password: ********'],
      ['a comparison', 'if (token == null) return;'],
      ['a key with an unrelated suffix', 'token_count: 123456'],
      ['prose that mentions a password', 'Choose a strong password and never share it.'],
      ['a variable on the right-hand side', "const password = passwordFile ? read(passwordFile) : '';"],
      ['prose after a colon', '-- no credentials: agents authenticate with keys issued at run time'],
      ['an example fill-in', 'OPENAI_API_KEY=your-openai-api-key-here'],
      ['an example change-me', 'POSTGRES_PASSWORD=changeme'],
    ])('ignores %s', async (_label, text) => expect(await fires('secretAssignment', text)).toBe(false));
  });

  // Built from repeated runs at test time, so no committed string has a live token's shape.
  const run = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

  describe('vendorToken', () => {
    it.each([
      ['a GitHub classic token in prose', `use ghp_${run('a1B2', 36)} for the clone`],
      ['a GitHub fine-grained token', `github_pat_${run('Xy9_', 82)}`],
      ['a GitLab token', `glpat-${run('Qw3-', 20)}`],
      ['a Slack bot token of low entropy', 'xoxb-1111-2222-aaaaaaaaaaaa'],
      ['a Slack webhook', `https://hooks.slack.com/services/T${run('A1', 9)}/B${run('B2', 9)}/${run('c3', 24)}`],
      ['an npm token', `npm_${run('n1', 36)}`],
      ['a Stripe restricted key', `rk_test_${run('s9', 30)}`],
      ['an OpenAI project key', `sk-proj-${run('p0-_', 100)}`],
      ['an Anthropic key', `sk-ant-api03-${run('k7', 93)}AA`],
      ['a Hugging Face token', `hf_${run('abC', 34)}`],
      ['a SendGrid key', `SG.${run('g1', 22)}.${run('h2', 43)}`],
      ['a Vault token', `hvs.${run('v4', 95)}`],
      ['a token after an identifier underscore', `MY_TOKEN_ghp_${run('a1B2', 36)}`],
    ])('detects %s', async (_label, text) => expect(await fires('vendorToken', text)).toBe(true));
    it.each([
      ['a prefix with a short body', `ghp_${run('a1', 20)}`],
      ['a prefix glued to a word', `xghp_${run('a1B2', 36)}`],
      ['a body one character too long', `npm_${run('n1', 37)}`],
      ['the prefix alone in prose', 'tokens start with ghp_ or glpat- and sk_live_'],
      ['a Stripe publishable key', `pk_live_${run('s9', 30)}`],
    ])('ignores %s', async (_label, text) => expect(await fires('vendorToken', text)).toBe(false));
  });

  describe('credentialUrl', () => {
    it.each([
      ['a PostgreSQL connection string', 'DATABASE_URL=postgres://app:s3cretpw@db.internal:5432/orders'],
      ['basic auth in an https URL', 'curl https://deploy:tr0ub4dor@artifacts.example.com/upload'],
      ['a MongoDB SRV string', '"mongodb+srv://svc:pa55word1@cluster0.example.net/app"'],
      ['a short weak password', 'redis://default:hunter2@cache:6379'],
      ['an upper-case scheme', 'POSTGRES://app:s3cretpw@db.internal:5432/orders'],
    ])('detects %s', async (_label, text) => expect(await fires('credentialUrl', text)).toBe(true));
    it.each([
      ['a URL with a user and no password', 'postgres://app@db.example.com:5432/app'],
      ['a templated password', 'postgres://app:${DB_PASSWORD}@db:5432/app'],
      ['a shell variable', 'amqp://guest:$RABBIT_PASS@mq:5672'],
      ['a documented placeholder', 'https://user:<password>@example.com'],
      ['a mask', 'mysql://root:****@localhost/db'],
      ['a host and port, not a user', 'see https://example.com:8443/path@v2'],
    ])('ignores %s', async (_label, text) => expect(await fires('credentialUrl', text)).toBe(false));
  });

  describe('highEntropy', () => {
    it.each([AWS_SECRET, RANDOM_KEY, `${RANDOM_KEY}==`, `blob:${RANDOM_KEY}${RANDOM_KEY}`])('detects %s', async (text) =>
      expect(await fires('highEntropy', text)).toBe(true),
    );
    it.each([
      ['a UUID', '550e8400-e29b-41d4-a716-446655440000'],
      ['a SHA-256 digest', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
      ['a slug with a number', 'the-quick-brown-fox-jumps-over-1-lazy-dog'],
      ['a log path', '/var/log/nginx/access-2024-01-15'],
      ['a long identifier without digits', 'getUserAccountSettingsByIdentifierAndName'],
      ['key=value pairs in a log line', 'request_id=3f9a2b7c1d4e5f60 path=/api/v2/users/12345 status=200'],
      ['a token shorter than the minimum', 'q8Zr2LmX9vT4pN7sK1wY6bH'],
      ['an npm integrity digest', `"integrity": "sha512-${'q8Zr2LmX9vT4pN7sK1wY6bH3dF5gJ0cE'.repeat(3).slice(0, 86)}=="`],
      ['a subresource-integrity digest', `integrity="sha384-${`${RANDOM_KEY}${RANDOM_KEY}`}"`],
      ['a go.sum checksum', `golang.org/x/sys v0.21.0 h1:${`${RANDOM_KEY}${RANDOM_KEY}`.slice(0, 43)}=`],
      ['the payload of a base64 data URL', `![logo](data:image/png;base64,iVBORw0KGgo${RANDOM_KEY}${RANDOM_KEY})`],
      ['a camelCase identifier with numbers', 'export function createSha256HexDigestFromUtf8(text)'],
      ['a dashed UUID pair', '550e8400-e29b-41d4-a716-446655440000_6ba7b810-9dad-11d1-80b4-00c04fd430c8'],
    ])('ignores %s', async (_label, text) => expect(await fires('highEntropy', text)).toBe(false));

    it.each([
      ['a digest prefix on a token of another length', `sha512-${RANDOM_KEY}`],
      ['h1: on a token of another length', `h1:${RANDOM_KEY}`],
      ['base64 after a URL that is not a data URL', `https://example.com/x;base64,${RANDOM_KEY}`],
    ])('still detects %s', async (_label, text) => expect(await fires('highEntropy', text)).toBe(true));

    it('allows a token below a raised entropy threshold', async () => {
      expect(await fires('highEntropy', AWS_SECRET, { entropyThreshold: 5.5 })).toBe(false);
      expect(await fires('highEntropy', AWS_SECRET, { entropyThreshold: 4.5 })).toBe(true);
    });

    it('catches a hex secret once the threshold is lowered for it', async () => {
      const hex = 'e3b0c44298fc1c149afbf4c8996fb924';
      expect(await fires('highEntropy', hex)).toBe(false);
      expect(await fires('highEntropy', hex, { entropyThreshold: 3 })).toBe(true);
    });

    it('ignores tokens shorter than a raised minimum length', async () => {
      expect(await fires('highEntropy', AWS_SECRET, { minEntropyTokenLength: 41 })).toBe(false);
      expect(await fires('highEntropy', AWS_SECRET, { minEntropyTokenLength: 40 })).toBe(true);
    });
  });

  describe('defaults', () => {
    it('runs every detector and names each that fired, in detector order', async () => {
      const decision = await judge(piiSecrets(), `key ${AWS_KEY_ID} for ops@example.com, ssn 123-45-6789`);
      expect(decision).toEqual({ allowed: false, detections: ['email', 'ssn', 'awsAccessKey'] });
    });

    it('allows ordinary prose, code, JSON and logs', async () => {
      const text = [
        'On 2024-03-15 at 10:30 the team shipped version 2.4.1 to 1,250 users; see',
        'https://docs.example.org/guide/getting-started for details. Order #4521 came to $1,299.99.',
        'const token = tokens[3] ?? options.limit; // the next token in the stream',
        'export async function getUserAccount(id: string): Promise<Account> { return repo.find(id); }',
        '{"id":"550e8400-e29b-41d4-a716-446655440000","count":42,"sha":"9fceb02d0ae598e95dc970b74767f19372d61af8"}',
        '2024-05-01T12:34:56.789Z INFO [billing] request_id=3f9a2b7c1d4e5f60 status=200 duration_ms=12.5',
      ].join('\n');
      expect(await judge(piiSecrets(), text)).toEqual({ allowed: true });
    });

    it('never puts the inspected text into the decision', async () => {
      const decision = await judge(piiSecrets(), `token=${RANDOM_KEY} ${JWT} ${AWS_KEY_ID}`);
      expect(decision.allowed).toBe(false);
      const serialised = JSON.stringify(decision);
      for (const secret of [RANDOM_KEY, 'eyJhbGci', AWS_KEY_ID]) expect(serialised).not.toContain(secret);
    });

    it('holds back 64 characters, both phases, every channel, frozen', () => {
      const policy = piiSecrets();
      expect(policy.holdBackChars).toBe(64);
      expect(policy.name).toBe('pii-secrets');
      expect(policy.phases).toEqual(['input', 'output']);
      expect(policy.channels).toEqual(['answer', 'reasoning', 'object']);
      expect(Object.isFrozen(policy)).toBe(true);
      expect(Object.isFrozen(policy.phases)).toBe(true);
    });

    it('takes a hold-back override, including Infinity', () => {
      expect(piiSecrets({ holdBackChars: 128 }).holdBackChars).toBe(128);
      expect(piiSecrets({ holdBackChars: Number.POSITIVE_INFINITY }).holdBackChars).toBe(Infinity);
    });

    it('lists its detector ids in a stable, frozen order', () => {
      expect(PII_SECRETS_DETECTOR_IDS).toEqual([
        'email',
        'ssn',
        'phone',
        'creditCard',
        'awsAccessKey',
        'privateKey',
        'jwt',
        'secretAssignment',
        'highEntropy',
        'vendorToken',
        'credentialUrl',
      ]);
      expect(Object.isFrozen(PII_SECRETS_DETECTOR_IDS)).toBe(true);
    });

    it('runs only the selected detectors', async () => {
      const policy = piiSecrets({ detectors: ['ssn'] });
      expect(await judge(policy, 'ops@example.com')).toEqual({ allowed: true });
      expect(await judge(policy, '123-45-6789')).toEqual({ allowed: false, detections: ['ssn'] });
    });

    it('gives the same answer on repeated calls, keeping no state between them', async () => {
      const policy = piiSecrets();
      const text = `a ${AWS_KEY_ID} b ops@example.com`;
      const first = await judge(policy, text);
      expect(await judge(policy, 'nothing here')).toEqual({ allowed: true });
      expect(await judge(policy, text)).toEqual(first);
    });
  });

  describe('allowlist', () => {
    it('exempts a detected value equal to an allowlisted string', async () => {
      const policy = piiSecrets({ detectors: ['email'], allowlist: ['support@example.com'] });
      expect(await judge(policy, 'mail support@example.com')).toEqual({ allowed: true });
      expect((await judge(policy, 'mail sales@example.com')).allowed).toBe(false);
    });

    it('compares strings with the whole value, not a part of it', async () => {
      const policy = piiSecrets({ detectors: ['email'], allowlist: ['example.com'] });
      expect((await judge(policy, 'jane@example.com')).allowed).toBe(false);
    });

    it('still denies when one value is exempt and another is not', async () => {
      const policy = piiSecrets({ detectors: ['email'], allowlist: ['support@example.com'] });
      expect((await judge(policy, 'support@example.com or jane@example.com')).allowed).toBe(false);
    });

    it('exempts a value a RegExp matches, on every call even with the g flag', async () => {
      const callers = /@example\.com$/g;
      const policy = piiSecrets({ detectors: ['email'], allowlist: [callers] });
      for (let i = 0; i < 3; i++) expect(await judge(policy, 'jane@example.com')).toEqual({ allowed: true });
      expect(callers.lastIndex).toBe(0);
      expect((await judge(policy, 'jane@example.org')).allowed).toBe(false);
    });

    it('checks the assigned value of a secret assignment', async () => {
      const policy = piiSecrets({ detectors: ['secretAssignment'], allowlist: ['changeme-in-prod'] });
      expect(await judge(policy, 'password: changeme-in-prod')).toEqual({ allowed: true });
      expect((await judge(policy, 'password: hunter2hunter2')).allowed).toBe(false);
    });
  });

  describe('resilience', () => {
    it.each([
      ['a long local part without a domain', `${'a'.repeat(60_000)}@`],
      ['many domain labels', `x@${'b.'.repeat(30_000)}c`],
      ['a long run of spaced digits', '1 '.repeat(50_000)],
      ['a long header-like run', `eyJ${'a'.repeat(100_000)}`],
      ['a long run of single capitals and dashes', `${'A-'.repeat(30_000)}1x`],
      ['repeated assignment keys', 'token='.repeat(20_000)],
      ['a long run of dashes', '-'.repeat(100_000)],
    ])('judges %s in linear time', async (_label, text) => {
      const policy = piiSecrets();
      const started = performance.now();
      await judge(policy, text);
      // A backtracking blow-up on 60-100k characters takes minutes; a linear scan takes milliseconds.
      expect(performance.now() - started).toBeLessThan(2000);
    });
  });

  describe('construction refuses', () => {
    const cases: [string, () => unknown][] = [
      ['an unknown option field', () => piiSecrets({ entropyTreshold: 3 } as never)],
      ['options that are not an object', () => piiSecrets([] as never)],
      ['an unknown detector id', () => piiSecrets({ detectors: ['creditcard' as never] })],
      ['an empty detector list', () => piiSecrets({ detectors: [] })],
      ['a repeated detector', () => piiSecrets({ detectors: ['jwt', 'jwt'] })],
      ['an entropy threshold of zero', () => piiSecrets({ entropyThreshold: 0 })],
      ['a negative entropy threshold', () => piiSecrets({ entropyThreshold: -1 })],
      ['an entropy threshold above 8', () => piiSecrets({ entropyThreshold: 8.01 })],
      ['a NaN entropy threshold', () => piiSecrets({ entropyThreshold: Number.NaN })],
      ['a string entropy threshold', () => piiSecrets({ entropyThreshold: '4' as never })],
      ['an entropy threshold without the highEntropy detector', () =>
        piiSecrets({ detectors: ['email'], entropyThreshold: 4.5 })],
      ['a minimum token length without the highEntropy detector', () =>
        piiSecrets({ detectors: ['email'], minEntropyTokenLength: 30 })],
      ['a zero minimum token length', () => piiSecrets({ minEntropyTokenLength: 0 })],
      ['a fractional minimum token length', () => piiSecrets({ minEntropyTokenLength: 24.5 })],
      ['a minimum token length under 8', () => piiSecrets({ minEntropyTokenLength: 7 })],
      ['an allowlist that is not an array', () => piiSecrets({ allowlist: 'x' as never })],
      ['an empty allowlist string', () => piiSecrets({ allowlist: [''] })],
      ['an allowlist RegExp that matches empty text', () => piiSecrets({ allowlist: [/.*/] })],
      ['an allowlist entry of another type', () => piiSecrets({ allowlist: [1 as never] })],
      ['an unknown phase', () => piiSecrets({ phases: ['outputs' as never] })],
      ['an unknown channel', () => piiSecrets({ channels: ['tool' as never] })],
      ['a zero hold-back', () => piiSecrets({ holdBackChars: 0 })],
      ['a bad name', () => piiSecrets({ name: 'pii secrets!' })],
    ];
    it.each(cases)('%s with a TypeError', (_label, build) => {
      expect(build).toThrow(TypeError);
    });

    it('accepts the boundary threshold of 8 bits per character', () => {
      expect(piiSecrets({ entropyThreshold: 8 }).name).toBe('pii-secrets');
    });

    it('without echoing an allowlist entry or detector id in the message', () => {
      for (const build of [
        () => piiSecrets({ allowlist: [AWS_KEY_ID, new RegExp(`${AWS_KEY_ID}|`)] }),
        () => piiSecrets({ detectors: [AWS_KEY_ID as never] }),
      ]) {
        expect(build).toThrow(TypeError);
        expect(build).not.toThrow(AWS_KEY_ID);
      }
    });
  });
});
