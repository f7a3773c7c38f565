import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../src/support/processes.js';

// The broker the scripts start (infra/kafka/kafka.sh) logs every authorization it denies to
// <state>/kafka/logs/kafka-authorizer.log: the report of a refused attack on the cluster.
const LOG = path.join(process.env['GATEHOUSE_STATE_DIR'] ?? path.join(ROOT, '.gatehouse'), 'kafka/logs/kafka-authorizer.log');

export interface Denial {
  readonly principal: string;
  readonly operation: string;
  /** e.g. `Group:LITERAL:svc-policy:policy-evaluator-server`. */
  readonly resource: string;
}

/** Where the authorizer log ends now: denials after this mark are the test's. */
export function authorizerLogMark(): number {
  if (!existsSync(LOG)) throw new Error(`the broker's authorizer log is not at ${LOG} (run against the broker infra/kafka/kafka.sh starts)`);
  return statSync(LOG).size;
}

/** The denials the broker logged since `mark`. */
export function deniedSince(mark: number): Denial[] {
  const size = statSync(LOG).size;
  // A rolled-over log starts again from 0.
  const from = size < mark ? 0 : mark;
  const buffer = Buffer.alloc(size - from);
  const fd = openSync(LOG, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  const denials: Denial[] = [];
  for (const line of buffer.toString('utf8').split('\n')) {
    const m = /Principal = (\S+) is Denied operation = (\S+) from host = \S+ on resource = (\S+)/.exec(line);
    if (m) denials.push({ principal: m[1]!, operation: m[2]!, resource: m[3]! });
  }
  return denials;
}
