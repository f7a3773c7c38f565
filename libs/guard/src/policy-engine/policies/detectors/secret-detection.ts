// Credential detection for `piiSecrets`: cloud key ids, PEM private keys, JWTs and secrets
// assigned to secret-named keys. High-entropy tokens are in entropy.ts.
import { camelCaseWords } from './entropy.js';
import { regexScanner, type Scanner } from './scan.js';

/** AWS access key ids (long-term and temporary, user, role and group ids). */
export const scanAwsAccessKeys: Scanner = regexScanner(
  /(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
);

/** PEM private key headers (RSA, EC, DSA, OpenSSH, encrypted, PGP). */
export const scanPrivateKeys: Scanner = regexScanner(
  /-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----/g,
  { prefilter: '-----BEGIN ' },
);

// An unsigned token (`alg: none`) has an empty third segment and is still a credential.
/** JSON Web Tokens: two base64url JSON segments and a signature, possibly empty. */
export const scanJwts: Scanner = regexScanner(
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{1,8192}\.eyJ[A-Za-z0-9_-]{1,8192}\.[A-Za-z0-9_-]{0,8192}/g,
  { prefilter: 'eyJ' },
);

// A secret-named key (anywhere in an identifier, so `DB_PASSWORD`, `githubToken` and
// `client_secret` all count; plurals such as `max_tokens` do not), an assignment operator
// (`=`, `:`, `:=`, `=>`, optionally after a closing quote) and a value of at least six
// characters, quoted or not. Group 1, the value, is what is reported.
const SECRET_KEY = String.raw`(?:api[_-]?key|secret|passw(?:or)?d|passphrase|token|access[_-]?key(?:[_-]?id)?|private[_-]?key|credentials?)`;
const SECRET_KEY_SUFFIX = String.raw`(?:[_.-]?(?:(?:access[_.-]?)?key(?:[_.-]?id)?|secret))?`;
const ASSIGNMENT = String.raw`["'\x60]?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}["'\x60]?`;
const SECRET_VALUE = String.raw`([^\s"'\x60,;]{6,256})`;

/** A value assigned to a secret-named key, unless it is a placeholder; reports the value. */
export const scanSecretAssignments: Scanner = regexScanner(
  new RegExp(SECRET_KEY + SECRET_KEY_SUFFIX + ASSIGNMENT + SECRET_VALUE, 'gi'),
  {
    group: 1,
    accept: (value, text, start) =>
      !looksLikePlaceholder(value) && (quoted(text, start) || (!variableName(value) && !proseWord(value, text, start))),
  },
);

const REFERENCE_VALUE = /^(?:\$\{|\$\(|\$[A-Z_][A-Z0-9_]*$|\{\{|<|%[({]|(?:process\.env|os\.environ|os\.getenv)\b)/;
const CODE_VALUE = /^[A-Za-z_$][\w$]*(?:(?:\.[A-Za-z_$][\w$]*)+(?:[([]|$)|[([])/;
const MASKED_VALUE = /^(?:\*+|x+|•+|\.+)$/i;
// The fill-me-in values of example configuration: `your-api-key-here`, `YOUR_TOKEN`, `changeme`.
const EXAMPLE_VALUE = /^(?:your[_-][\w-]*|[\w-]*[_-]here|change[_-]?me|replace[_-]?me)$/i;
// Unquoted, a lowerCamelCase name of words on the right of an assignment is a variable in
// code (`const password = passwordFile ? ...`, `token: accessToken`), and a lower-case word
// followed by more words is prose (`credentials: agents authenticate with ...`). Quoted, either
// is a value.
const QUOTES = new Set(['"', "'", '`']);
const LOWER_CAMEL_CASE = /^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$/;
const LOWER_WORD = /^[a-z]+$/;
const NEXT_WORD = /^ [A-Za-z]/;

function quoted(text: string, start: number): boolean {
  return QUOTES.has(text.charAt(start - 1));
}

function variableName(value: string): boolean {
  return LOWER_CAMEL_CASE.test(value) && camelCaseWords(value);
}

function proseWord(value: string, text: string, start: number): boolean {
  return LOWER_WORD.test(value) && NEXT_WORD.test(text.slice(start + value.length, start + value.length + 2));
}

const TYPE_WORDS = new Set(['string', 'number', 'boolean', 'undefined', 'null', 'none', 'object', 'unknown', 'optional', 'required']);

// A value that names where the secret comes from (`${API_KEY}`, `process.env.TOKEN`,
// `getToken()`), a type annotation (`password: string`), a mask (`********`) or an example
// configuration's fill-in (`your-api-key-here`) holds no secret.
function looksLikePlaceholder(value: string): boolean {
  return (
    REFERENCE_VALUE.test(value) ||
    CODE_VALUE.test(value) ||
    MASKED_VALUE.test(value) ||
    EXAMPLE_VALUE.test(value) ||
    TYPE_WORDS.has(value.toLowerCase())
  );
}
