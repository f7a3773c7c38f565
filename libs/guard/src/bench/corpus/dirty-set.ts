// The labelled positives for the detector quality bench and its spec: real-format but fake
// PII and credentials, one sample per line of context, generated from a fixed seed so every
// run (and every machine) judges the same set. Nothing here is a live credential: the values
// are drawn at random, and generated at run time so no secret-shaped string is committed.
import type { PiiSecretsDetectorId } from '../../policy-engine/policies/pii-secrets.js';
import { type Random, seeded } from '../seeded-random.js';

/** One positive: `text` holds something the `detector` must find. */
export interface DirtySample {
  readonly detector: PiiSecretsDetectorId;
  readonly text: string;
}


const int = (random: Random, min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const chars = (random: Random, alphabet: string, length: number) =>
  Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');

const DIGITS = '0123456789';
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BASE64 = `${BASE62}+/`;
const BASE64URL = `${BASE62}-_`;
const FIRST_NAMES = ['jane', 'omar', 'li', 'priya', 'tomas', 'amara', 'kenji', 'sofia', 'noah', 'elif'];
const LAST_NAMES = ['doe', 'haddad', 'wei', 'raman', 'novak', 'okafor', 'sato', 'rossi', 'berg', 'yilmaz'];
const DOMAINS = ['example.com', 'mail.example.org', 'acme-corp.io', 'corp.example.co.uk', 'example.net'];

/** The dirty set: every detector's positives, in detector order. */
export function dirtySamples(seed = 0x0d17_7e55): readonly DirtySample[] {
  const random = seeded(seed);
  const samples: DirtySample[] = [];
  const add = (detector: PiiSecretsDetectorId, count: number, make: (random: Random, i: number) => string) => {
    for (let i = 0; i < count; i++) samples.push({ detector, text: make(random, i) });
  };
  add('email', 30, email);
  add('ssn', 20, ssn);
  add('phone', 30, phone);
  add('creditCard', 48, card);
  add('awsAccessKey', 20, (r) => `${pick(r, ['aws_access_key_id = ', 'key id ', '"AccessKeyId": "'])}${pick(r, ['AKIA', 'ASIA'])}${chars(r, UPPER_DIGITS, 16)}`);
  add('privateKey', 12, (r, i) => `-----BEGIN ${['', 'RSA ', 'EC ', 'DSA ', 'OPENSSH ', 'ENCRYPTED '][i % 6]}PRIVATE KEY-----\n${chars(r, BASE64, 64)}`);
  add('jwt', 20, jwt);
  add('secretAssignment', 30, secretAssignment);
  add('highEntropy', 40, highEntropy);
  // Added after the others so their samples (drawn from the same stream) stay as they were.
  add('vendorToken', 30, vendorToken);
  add('credentialUrl', 20, credentialUrl);
  return Object.freeze(samples);
}

function email(random: Random, i: number): string {
  const address = `${pick(random, FIRST_NAMES)}${pick(random, ['.', '_', '+news.', ''])}${pick(random, LAST_NAMES)}@${pick(random, DOMAINS)}`;
  return [`please write to ${address} today`, `"to": "${address}"`, `<a href="mailto:${address}">mail us</a>`, `cc: ${address}, bcc: none`][i % 4]!;
}

function ssn(random: Random, i: number): string {
  const area = String(int(random, 1, 665)).padStart(3, '0');
  const group = String(int(random, 1, 99)).padStart(2, '0');
  const serial = String(int(random, 1, 9999)).padStart(4, '0');
  const separator = i % 2 === 0 ? '-' : ' ';
  return `${pick(random, ['SSN', 'ssn:', 'social security number'])} ${area}${separator}${group}${separator}${serial}`;
}

function phone(random: Random, i: number): string {
  const area = int(random, 201, 989);
  const exchange = int(random, 200, 999);
  const line = String(int(random, 0, 9999)).padStart(4, '0');
  const forms = [
    `call (${area}) ${exchange}-${line}`,
    `${area}-${exchange}-${line}`,
    `${area}.${exchange}.${line}`,
    `+1 ${area} ${exchange} ${line}`,
    `+44 20 ${int(random, 7000, 7999)} ${line}`,
    `tel: +${int(random, 30, 49)}${chars(random, DIGITS, 9)}`,
    // A short number before the phone number: issue 16, item 5.
    `call ${int(random, 1, 9)} +1 ${area} ${exchange} ${line}`,
    `room ${int(random, 10, 99)} (${area}) ${exchange}-${line}`,
  ];
  return forms[i % forms.length]!;
}

// Issuer prefixes and lengths: Visa, Mastercard (51-55 and 2-series), Amex, Discover, JCB, Diners.
const NETWORKS: readonly [prefix: string, length: number, layout: readonly number[]][] = [
  ['4', 16, [4, 4, 4, 4]],
  ['5', 16, [4, 4, 4, 4]],
  ['2221', 16, [4, 4, 4, 4]],
  ['37', 15, [4, 6, 5]],
  ['6011', 16, [4, 4, 4, 4]],
  ['35', 16, [4, 4, 4, 4]],
  ['36', 14, [4, 6, 4]],
  ['4', 19, [4, 4, 4, 4, 3]],
];

function card(random: Random, i: number): string {
  const [prefix, length, layout] = NETWORKS[i % NETWORKS.length]!;
  const digits = luhnNumber(random, prefix, length);
  const separator = pick(random, [' ', '-', '']);
  let at = 0;
  const number = layout.map((size) => digits.slice(at, (at += size))).join(separator);
  const month = String(int(random, 1, 12)).padStart(2, '0');
  const cvv = chars(random, DIGITS, prefix === '37' ? 4 : 3);
  // Every form but the first two puts another number beside the card: issue 16, item 5.
  const forms = [
    `card ${number}`,
    `pay with ${number} please`,
    `${number} ${cvv}`,
    `${number} ${month}/${int(random, 25, 31)}`,
    `${number} exp ${month}/${int(random, 25, 31)} cvv ${cvv}`,
    `${int(random, 1, 9)} ${number}`,
    `item ${int(random, 10, 999)} ${number}`,
    `qty ${int(random, 1, 9)}, ${number}`,
  ];
  return forms[Math.floor(i / NETWORKS.length) % forms.length]!;
}

function luhnNumber(random: Random, prefix: string, length: number): string {
  const body = prefix + chars(random, DIGITS, length - prefix.length - 1);
  for (let check = 0; check < 10; check++) {
    if (luhnSum(`${body}${check}`) % 10 === 0) return `${body}${check}`;
  }
  throw new Error('unreachable: one check digit always completes the sum');
}

function luhnSum(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    const digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    sum += i % 2 === 1 ? (digit > 4 ? digit * 2 - 9 : digit * 2) : digit;
  }
  return sum;
}

const base64url = (text: string) => Buffer.from(text).toString('base64url');

function jwt(random: Random): string {
  const header = base64url(JSON.stringify({ alg: pick(random, ['HS256', 'RS256', 'ES256']), typ: 'JWT' }));
  const payload = base64url(JSON.stringify({ sub: chars(random, DIGITS, 10), iat: int(random, 1.6e9, 1.8e9) }));
  return `${pick(random, ['Authorization: Bearer ', 'token ', 'id_token='])}${header}.${payload}.${chars(random, BASE64URL, 43)}`;
}

const SECRET_KEYS = ['api_key', 'apiKey', 'client_secret', 'DB_PASSWORD', 'password', 'auth_token', 'githubToken', 'AWS_SECRET_ACCESS_KEY', 'private_key', 'passphrase'];

function secretAssignment(random: Random, i: number): string {
  const key = pick(random, SECRET_KEYS);
  const value = chars(random, BASE62, int(random, 8, 24));
  return [`${key}=${value}`, `${key}: "${value}"`, `"${key}": "${value}",`, `export ${key.toUpperCase()}='${value}'`, `${key} := "${value}"`][i % 5]!;
}

function highEntropy(random: Random, i: number): string {
  const token = [
    () => chars(random, BASE62, int(random, 32, 48)),
    () => chars(random, BASE64, int(random, 32, 44)),
    () => `sk-${chars(random, BASE62, 40)}`,
    () => `ghp_${chars(random, BASE62, 36)}`,
    () => `${chars(random, BASE64URL, 43)}`,
  ][i % 5]!();
  return pick(random, [`blob ${token}`, `session cookie ${token}`, `{"value": "${token}"}`, `--header X-Api: ${token}`]);
}

// One per vendor format in turn, in the kind of line each turns up in; some bodies repeat a
// short run, so their entropy is low and only the format gives them away.
function vendorToken(random: Random, i: number): string {
  const body = (alphabet: string, length: number) => (i % 4 === 3 ? chars(random, alphabet, 4).repeat(Math.ceil(length / 4)).slice(0, length) : chars(random, alphabet, length));
  const forms = [
    () => `GITHUB_TOKEN is ghp_${body(BASE62, 36)}`,
    () => `token: github_pat_${body(BASE62, 82)}`,
    () => `glpat-${body(BASE62, 20)}`,
    () => `slack bot xoxb-${chars(random, DIGITS, 12)}-${chars(random, DIGITS, 13)}-${body(BASE62, 24)}`,
    () => `https://hooks.slack.com/services/T${body(BASE62, 10)}/B${body(BASE62, 10)}/${body(BASE62, 24)}`,
    () => `//registry.npmjs.org/:_authToken=npm_${body(BASE62, 36)}`,
    () => `stripe key sk_live_${body(BASE62, 32)}`,
    () => `OPENAI_API_KEY=sk-proj-${body(BASE64URL, 120)}`,
    () => `"anthropic": "sk-ant-api03-${body(BASE64URL, 93)}AA"`,
    () => `hf_${body('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', 34)}`,
    () => `SENDGRID=SG.${body(BASE62, 22)}.${body(BASE62, 43)}`,
    () => `shpat_${body('0123456789abcdef', 32)}`,
    () => `vault token hvs.${body(BASE64URL, 95)}`,
    () => `maps key AIza${body(BASE64URL, 35)}`,
    () => `docker login -p dckr_pat_${body(BASE64URL, 27)}`,
  ];
  return forms[i % forms.length]!();
}

function credentialUrl(random: Random, i: number): string {
  const user = pick(random, ['app', 'deploy', 'admin', 'svc_orders', 'ci']);
  const password = i % 5 === 4 ? pick(random, ['hunter2', 'letmein1', 'summer24']) : chars(random, BASE62, int(random, 8, 24));
  const host = pick(random, ['db.internal.example.com:5432', 'cache.example.net:6379', 'artifacts.example.org', 'mq.example.com']);
  const scheme = ['postgres', 'mysql', 'mongodb+srv', 'redis', 'https', 'amqp', 'ftp'][i % 7]!;
  return [`DATABASE_URL=${scheme}://${user}:${password}@${host}/app`, `connect to ${scheme}://${user}:${password}@${host}`, `"url": "${scheme}://${user}:${password}@${host}/v1"`][i % 3]!;
}
