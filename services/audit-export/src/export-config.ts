import { GatehouseError, type Keyring, keyringFromEnv, SIGNING_ENV } from '@gatehouse/contracts';
import { type ApiKeyPrincipal, ApiKeySha256, parsePrincipalList, principalListText } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { type FeedFormat, FEED_FORMATS } from './feeds/export-line.js';
import { parseStartPosition, type StartPosition } from './export/start-position.js';
import { type AuditReader, parseAuditReaders } from './http/reader-auth.js';

/** Environment variables of the export; with no sink configured the service runs projection + query only. */
export const EXPORT_ENV = {
  name: 'GATEHOUSE_EXPORT_NAME',
  from: 'GATEHOUSE_EXPORT_FROM',
  fileDir: 'GATEHOUSE_EXPORT_FILE_DIR',
  fileFormats: 'GATEHOUSE_EXPORT_FILE_FORMATS',
  fileMaxBytes: 'GATEHOUSE_EXPORT_FILE_MAX_BYTES',
  httpUrl: 'GATEHOUSE_EXPORT_HTTP_URL',
  httpFormat: 'GATEHOUSE_EXPORT_HTTP_FORMAT',
  httpMaxAttempts: 'GATEHOUSE_EXPORT_HTTP_MAX_ATTEMPTS',
  httpTimeoutMs: 'GATEHOUSE_EXPORT_HTTP_TIMEOUT_MS',
  kafka: 'GATEHOUSE_EXPORT_KAFKA',
  kafkaFormat: 'GATEHOUSE_EXPORT_KAFKA_FORMAT',
  kafkaPartitions: 'GATEHOUSE_EXPORT_KAFKA_PARTITIONS',
  operators: 'GATEHOUSE_EXPORT_OPERATORS',
  operatorsFile: 'GATEHOUSE_EXPORT_OPERATORS_FILE',
  readers: 'GATEHOUSE_AUDIT_READERS',
  readersFile: 'GATEHOUSE_AUDIT_READERS_FILE',
  verifyWaitMs: 'GATEHOUSE_EXPORT_VERIFY_WAIT_MS',
} as const;

export interface ExportOptions {
  readonly name: string;
  readonly from: StartPosition;
  readonly file?: { readonly directory: string; readonly formats: readonly FeedFormat[]; readonly maxBytes: number };
  readonly http?: { readonly url: string; readonly format: FeedFormat; readonly maxAttempts: number; readonly timeoutMs: number };
  readonly kafka?: { readonly format: FeedFormat; readonly partitions: number };
  /**
   * Who may move the export (`POST /v1/exports/:name/restart`: a rewind re-sends, a jump skips
   * what the SIEM would have received). None configured: every restart is refused.
   */
  readonly operators?: readonly ApiKeyPrincipal[];
  /**
   * Who may read the query API, each for its tenants (`GET /v1/decisions`, `/v1/runs/:id/timeline`;
   * an operator or any reader for `GET /v1/exports`). None configured: every query is refused.
   */
  readonly readers?: readonly AuditReader[];
  /**
   * The keys audit checkpoints are checked against (GATEHOUSE_TRUSTED_KEYS_FILE): which records
   * their source vouched for. None: every record reads as unverified.
   */
  readonly keyring?: Keyring;
  /** How long after a record's log time the export waits for its checkpoint before writing its line, ms (default 3,000). */
  readonly verifyWaitMs?: number;
  /** How often a standby replica asks for the export's lease, ms (default 2,000; tests shorten it). */
  readonly leaseRetryMs?: number;
  /** Back-off while a sink is down, ms (tests shorten it). */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
}

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

function format(variable: string, raw: string | undefined, fallback: FeedFormat): FeedFormat {
  const value = raw ?? fallback;
  if (!(FEED_FORMATS as readonly string[]).includes(value)) throw invalid(variable, 'must be ocsf or cef');
  return value as FeedFormat;
}

function positiveInt(variable: string, raw: string | undefined, fallback: number): number {
  const value = Number(raw ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw invalid(variable, 'must be a positive whole number');
  return value;
}

const OperatorSchema = z.strictObject({ id: z.string().min(1).max(256), role: z.string().min(1).max(128), apiKeySha256: ApiKeySha256 });

/** Parses `[{ id, role, apiKeySha256 }]`; a bad entry is CONFIG.INVALID naming the field (never a key). */
export function parseExportOperators(json: string | undefined, variable: string = EXPORT_ENV.operators): ApiKeyPrincipal[] {
  return parsePrincipalList(json, variable, 'operator', OperatorSchema).map((o) => ({ id: o.id, role: o.role, keyDigest: Buffer.from(o.apiKeySha256, 'hex') }));
}

/** Reads the export configuration; a bad value is CONFIG.INVALID naming the variable (never its value). */
export function exportOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ExportOptions {
  const name = env[EXPORT_ENV.name] ?? 'siem';
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw invalid(EXPORT_ENV.name, 'must be lower-case letters, digits and dashes');
  const from = parseStartPosition(env[EXPORT_ENV.from] ?? 'earliest');
  if (!from) throw invalid(EXPORT_ENV.from, 'must be earliest, latest or an ISO 8601 time');
  const fileDir = env[EXPORT_ENV.fileDir];
  const httpUrl = env[EXPORT_ENV.httpUrl];
  if (httpUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(httpUrl);
    } catch {
      throw invalid(EXPORT_ENV.httpUrl, 'must be an http(s) URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(EXPORT_ENV.httpUrl, 'must be an http(s) URL');
  }
  const kafka = env[EXPORT_ENV.kafka];
  if (kafka !== undefined && kafka !== 'true' && kafka !== 'false') throw invalid(EXPORT_ENV.kafka, 'must be true or false');
  const operatorList = principalListText(env, EXPORT_ENV.operators, EXPORT_ENV.operatorsFile);
  const operators = parseExportOperators(operatorList.text, operatorList.from);
  const readerList = principalListText(env, EXPORT_ENV.readers, EXPORT_ENV.readersFile);
  const readers = parseAuditReaders(readerList.text, readerList.from);
  const waitRaw = env[EXPORT_ENV.verifyWaitMs];
  const verifyWaitMs = Number(waitRaw ?? 3_000);
  if (!Number.isInteger(verifyWaitMs) || verifyWaitMs < 0 || verifyWaitMs > 600_000) throw invalid(EXPORT_ENV.verifyWaitMs, 'must be a whole number of milliseconds from 0 to 600000');
  // Optional: without trusted keys the service still projects and exports, and judges no source verified.
  const keyring = env[SIGNING_ENV.trustedKeysFile] || env[SIGNING_ENV.trustedKeys] ? keyringFromEnv(env) : undefined;
  const fileFormats = (env[EXPORT_ENV.fileFormats] ?? 'ocsf,cef').split(',').map((f) => format(EXPORT_ENV.fileFormats, f.trim(), 'ocsf'));
  return {
    name,
    from,
    operators,
    readers,
    verifyWaitMs,
    ...(keyring ? { keyring } : {}),
    ...(fileDir ? { file: { directory: fileDir, formats: [...new Set(fileFormats)], maxBytes: positiveInt(EXPORT_ENV.fileMaxBytes, env[EXPORT_ENV.fileMaxBytes], 64 * 1024 * 1024) } } : {}),
    ...(httpUrl
      ? {
          http: {
            url: httpUrl,
            format: format(EXPORT_ENV.httpFormat, env[EXPORT_ENV.httpFormat], 'ocsf'),
            maxAttempts: positiveInt(EXPORT_ENV.httpMaxAttempts, env[EXPORT_ENV.httpMaxAttempts], 5),
            timeoutMs: positiveInt(EXPORT_ENV.httpTimeoutMs, env[EXPORT_ENV.httpTimeoutMs], 10_000),
          },
        }
      : {}),
    ...(kafka === 'true'
      ? { kafka: { format: format(EXPORT_ENV.kafkaFormat, env[EXPORT_ENV.kafkaFormat], 'ocsf'), partitions: positiveInt(EXPORT_ENV.kafkaPartitions, env[EXPORT_ENV.kafkaPartitions], 1) } }
      : {}),
  };
}

/** True when at least one sink is configured. */
export function hasSinks(options: ExportOptions): boolean {
  return options.file !== undefined || options.http !== undefined || options.kafka !== undefined;
}

