// A deterministic mixed corpus for the content benchmarks: prose, code, JSON and log lines, with
// PII, secrets and denied phrases injected at a fixed rate. The same seed makes the same text on
// every machine, so two benchmarks (ours, and a peer's on the same texts) read identical input.
import { type Random, seeded } from './seeded-random.js';

/** The seed of the content benchmarks' corpus: fixed, so every run and every peer reads the same texts. */
export const MIXED_CORPUS_SEED = 0x5eed_2024;

// Roughly one block in 150 carries PII, a secret or a denied phrase.
const INJECTION_RATE = 1 / 150;

/** Phrases the denyPatterns policy of the benchmarks refuses; some are injected into the corpus. */
export const DENIED_PHRASES = [
  'internal use only',
  'do not distribute',
  'project nightingale',
  'ignore previous instructions',
  'reveal your system prompt',
  'drop table customers',
  'sudo rm -rf /',
  'confidential merger terms',
  'disable the safety filter',
  'export all user records',
] as const;

/** The corpus cut into texts of `size` characters (the last may be shorter). */
export function segment(corpus: string, size: number): string[] {
  const texts: string[] = [];
  for (let i = 0; i < corpus.length; i += size) texts.push(corpus.slice(i, i + size));
  return texts;
}

const int = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const chars = (random: Random, alphabet: string, length: number): string =>
  Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');

const WORDS = (
  'the a an of to and in is it that for on with as was by at be this from or are have not but had they his her ' +
  'which you were all one we can there their been if more when will would who so no out up into than them some ' +
  'could time these two may first then do any like my now over such our man me even most made after also did ' +
  'many before must through back years where much your way well down should because each just those people how ' +
  'too little state good very make world still own see men work long get here between both life being under never ' +
  'day same another know while last might us great old year off come since against go came right used take three ' +
  'policy agent model request response token stream guard boundary approval tenant workflow channel segment audit ' +
  'decision event ledger budget latency cache retry timeout window buffer chunk answer reasoning object schema'
).split(' ');
const IDENTIFIERS = ['user', 'order', 'account', 'session', 'item', 'result', 'config', 'handler', 'payload'];
const VERBS = ['get', 'set', 'load', 'save', 'build', 'parse', 'render', 'update', 'find', 'check'];
const SERVICES = ['api-gateway', 'billing', 'auth', 'search', 'ledger', 'notifier'];
const LEVELS = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR'];
const HEX = '0123456789abcdef';
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** About `targetChars` of prose, code, JSON and logs, one block in 150 carrying PII, a secret or a denied phrase. */
export function buildCorpus(targetChars: number, seed: number): string {
  const random = seeded(seed);
  const blocks: string[] = [];
  let length = 0;
  while (length < targetChars) {
    const kind = random();
    let block = kind < 0.4 ? prose(random) : kind < 0.6 ? code(random) : kind < 0.8 ? json(random) : logs(random);
    if (random() < INJECTION_RATE) block = `${block}\n${injection(random)}\n`;
    blocks.push(block);
    length += block.length;
  }
  return blocks.join('\n').slice(0, targetChars);
}

function prose(random: Random): string {
  const sentences: string[] = [];
  for (let s = int(random, 3, 7); s > 0; s--) {
    const words = Array.from({ length: int(random, 6, 20) }, () => pick(random, WORDS));
    if (random() < 0.15) words.push(String(int(random, 2, 2030)));
    const first = words[0] ?? 'the';
    words[0] = first.charAt(0).toUpperCase() + first.slice(1);
    sentences.push(`${words.join(' ')}${pick(random, ['.', '.', '.', '?', '!'])}`);
  }
  return `${sentences.join(' ')}\n`;
}

function code(random: Random): string {
  const lines: string[] = [];
  const name = `${pick(random, VERBS)}${capitalise(pick(random, IDENTIFIERS))}`;
  lines.push(`export async function ${name}(id: string, options: { limit?: number } = {}): Promise<Result> {`);
  for (let i = int(random, 3, 10); i > 0; i--) {
    const variable = pick(random, IDENTIFIERS);
    switch (int(random, 0, 4)) {
      case 0: {
        const call = `this.${pick(random, VERBS)}(${variable}Id, { retries: ${int(random, 1, 5)} })`;
        lines.push(`  const ${variable} = await ${call};`);
        break;
      }
      case 1:
        lines.push(
          `  if (${variable}.length > ${int(random, 1, 500)}) throw new Error('${pick(random, WORDS)} too long');`,
        );
        break;
      case 2:
        lines.push(`  // ${Array.from({ length: int(random, 4, 12) }, () => pick(random, WORDS)).join(' ')}`);
        break;
      case 3:
        lines.push(`  const token = tokens[${int(random, 0, 9)}] ?? options.limit; // not a secret: a variable`);
        break;
      default:
        lines.push(`  logger.debug({ ${variable}, elapsedMs: Date.now() - started }, '${name} step');`);
    }
  }
  lines.push(`  return { ok: true, value: ${pick(random, IDENTIFIERS)} };`, '}');
  return `${lines.join('\n')}\n`;
}

function json(random: Random): string {
  const records = Array.from({ length: int(random, 2, 6) }, () => ({
    id: uuid(random),
    name: `${pick(random, WORDS)} ${pick(random, WORDS)}`,
    count: int(random, 0, 100000),
    price: Number((random() * 1000).toFixed(2)),
    active: random() < 0.5,
    createdAt: isoTime(random),
    tags: Array.from({ length: int(random, 0, 4) }, () => pick(random, WORDS)),
    sha: chars(random, HEX, 40),
  }));
  return `${JSON.stringify({ data: records, page: int(random, 1, 40) }, null, random() < 0.5 ? 2 : undefined)}\n`;
}

function logs(random: Random): string {
  const lines: string[] = [];
  for (let i = int(random, 4, 16); i > 0; i--) {
    lines.push(
      `${isoTime(random)} ${pick(random, LEVELS)} [${pick(random, SERVICES)}] request_id=${chars(random, HEX, 16)} ` +
        `method=${pick(random, ['GET', 'POST', 'PUT'])} ` +
        `path=/api/v${int(random, 1, 3)}/${pick(random, IDENTIFIERS)}s/${int(random, 1, 99999)} ` +
        `status=${pick(random, [200, 200, 201, 204, 400, 404, 500])} duration_ms=${(random() * 900).toFixed(1)} ` +
        `tokens=${int(random, 10, 4000)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function injection(random: Random): string {
  switch (int(random, 0, 9)) {
    case 0:
      return `Contact ${pick(random, IDENTIFIERS)}.${pick(random, WORDS)}@example.com for access.`;
    case 1:
      return `SSN on file: ${int(random, 100, 665)}-${int(random, 10, 99)}-${int(random, 1000, 9999)}`;
    case 2:
      return `Call me at (${int(random, 200, 989)}) ${int(random, 200, 999)}-${int(random, 1000, 9999)} after five.`;
    case 3:
      return `card ${groups(luhnNumber(random, '4', 16))} exp 09/29`;
    case 4:
      return `aws_access_key_id = AKIA${chars(random, UPPER_ALNUM, 16)}`;
    case 5:
      return '-----BEGIN RSA PRIVATE KEY-----';
    case 6:
      return `Authorization: Bearer ${jwtLike(random)}`;
    case 7:
      return `export OPENAI_API_KEY="sk-${chars(random, ALNUM, 40)}"`;
    case 8:
      return `blob ${chars(random, ALNUM, 48)}`;
    default:
      return `Note: ${pick(random, DENIED_PHRASES).toUpperCase()} applies here.`;
  }
}

function uuid(random: Random): string {
  const hex = chars(random, HEX, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

function isoTime(random: Random): string {
  const month = int(random, 0, 11);
  const day = int(random, 1, 28);
  const seconds = int(random, 0, 86_399);
  return new Date(Date.UTC(2024, month, day) + seconds * 1000).toISOString();
}

function jwtLike(random: Random): string {
  return `eyJ${chars(random, ALNUM, 30)}.eyJ${chars(random, ALNUM, 60)}.${chars(random, ALNUM, 43)}`;
}

function luhnNumber(random: Random, prefix: string, length: number): string {
  let body = prefix + chars(random, '0123456789', length - prefix.length - 1);
  for (let check = 0; check < 10; check++) {
    const candidate = `${body}${check}`;
    if (luhnSum(candidate) % 10 === 0) return candidate;
  }
  body += '0';
  return body;
}

function luhnSum(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    const digit = Number(digits[digits.length - 1 - i]);
    sum += i % 2 === 1 ? (digit > 4 ? digit * 2 - 9 : digit * 2) : digit;
  }
  return sum;
}

function groups(digits: string): string {
  return digits.replace(/(\d{4})(?=\d)/g, '$1 ');
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
