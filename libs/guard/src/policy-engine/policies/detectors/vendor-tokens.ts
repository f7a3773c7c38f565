// Credentials recognisable by their form alone: tokens whose vendor prefix says what they are
// (GitHub, GitLab, Slack, npm, Stripe, OpenAI, Anthropic and others), and URLs that carry a
// password in their user part (basic auth, database connection strings). The entropy and
// assignment detectors find many of these by luck of the draw; these find every one, however
// low its entropy and wherever it stands.
import { regexScanner, type Scanner } from './scan.js';

// Each entry: a vendor's prefix and the body its tokens have. Bodies are the documented (or
// observed) alphabets and lengths; a shorter or longer run is not that vendor's token.
const VENDOR_TOKENS = [
  String.raw`gh[pousr]_[A-Za-z0-9_]{36}`, // GitHub classic: personal, OAuth, user, server, refresh
  String.raw`github_pat_[A-Za-z0-9_]{82}`, // GitHub fine-grained
  String.raw`glpat-[A-Za-z0-9_-]{20,128}`, // GitLab personal access token
  String.raw`xox[abporse]-(?:\d-)?(?:[A-Za-z0-9]{1,40}-)+[A-Za-z0-9]{1,40}`, // Slack bot, user, app-level tokens
  String.raw`xapp-\d-[A-Za-z0-9-]{20,200}`, // Slack app-level
  String.raw`hooks\.slack\.com/services/T[A-Za-z0-9]{1,40}/B[A-Za-z0-9]{1,40}/[A-Za-z0-9]{1,40}`, // Slack webhook
  String.raw`npm_[A-Za-z0-9_]{36}`, // npm
  String.raw`[sr]k_(?:live|test)_[A-Za-z0-9]{24,99}`, // Stripe secret and restricted keys
  String.raw`sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,200}`, // OpenAI project, service account, admin keys
  String.raw`sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}`, // OpenAI legacy
  String.raw`sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,128}`, // Anthropic
  String.raw`gsk_[A-Za-z0-9]{52}`, // Groq
  String.raw`hf_[A-Za-z]{34}`, // Hugging Face
  String.raw`lin_api_[A-Za-z0-9_]{32,128}`, // Linear
  String.raw`ntn_\d{11}[A-Za-z0-9]{35}`, // Notion
  String.raw`SG\.[A-Za-z0-9_-]{16,64}\.[A-Za-z0-9_-]{16,64}`, // SendGrid
  String.raw`shp(?:at|ca|pa|ss)_[A-Za-z0-9]{32,64}`, // Shopify
  String.raw`dckr_pat_[A-Za-z0-9_-]{27}`, // Docker Hub
  String.raw`figd_[A-Za-z0-9_-]{40,200}`, // Figma
  String.raw`dapi[a-f0-9]{32}(?:-\d)?`, // Databricks
  String.raw`hv[sbr]\.[A-Za-z0-9_-]{90,300}`, // HashiCorp Vault service, batch, recovery
  String.raw`glc_[A-Za-z0-9+/]{32,400}={0,2}`, // Grafana Cloud
  String.raw`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`, // Grafana service account
  String.raw`tskey-[a-z]{2,20}-[A-Za-z0-9_]{8,40}-[A-Za-z0-9_]{16,60}`, // Tailscale
  String.raw`AIza[A-Za-z0-9_-]{35}`, // Google API key
];

// Not inside a longer word on either side, so `my_ghp_...` in an identifier still counts (the
// underscore is a separator) but `xghp_` glued to letters does not.
const TOKEN = new RegExp(String.raw`(?<![A-Za-z0-9])(?:${VENDOR_TOKENS.join('|')})(?![A-Za-z0-9_])`, 'g');

/** Tokens in a vendor's credential format. */
export const scanVendorTokens: Scanner = regexScanner(TOKEN);

// scheme://user:password@host — any scheme (https, ftp, postgres, mysql, mongodb+srv, redis,
// amqp, ...), in either case (`POSTGRES://` connects as well). Group 1, the password, is what is
// reported; the host is a lookahead so the match ends with the password, as regexScanner's group needs.
const CREDENTIAL_URL = /\b[A-Za-z][A-Za-z0-9+.-]{1,20}:\/\/[^\s:/?#@"'`<>]{1,256}:([^\s/?#@"'`<>]{1,256})(?=@[A-Za-z0-9.-]{1,253})/g;
// A password that names where it comes from, or stands for one: `${DB_PASSWORD}`, `$PASS`,
// `<password>`, `****`, `{{secret}}`, `%(pw)s`, or a fill-in word.
const PLACEHOLDER_PASSWORD = /^(?:\$\{.*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>|\{\{.*\}\}|%\(.*\)s|\*+|x+|\.\.\.|password|passwd|pass|secret|changeme|pwd)$/i;

/** URLs that carry a password in their user part; reports the password. */
export const scanCredentialUrls: Scanner = regexScanner(CREDENTIAL_URL, {
  prefilter: '://',
  group: 1,
  accept: (password) => !PLACEHOLDER_PASSWORD.test(password),
});
