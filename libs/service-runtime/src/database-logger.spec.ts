import { afterAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { ContentFreeQueryLogger } from './database.js';

const lines: string[] = [];
Logger.overrideLogger({
  log: (m: unknown) => void lines.push(`log ${String(m)}`),
  error: (m: unknown) => void lines.push(`error ${String(m)}`),
  warn: (m: unknown) => void lines.push(`warn ${String(m)}`),
});
afterAll(() => Logger.overrideLogger(false));

describe('ContentFreeQueryLogger', () => {
  it('logs a failed query by SQLSTATE and its first words, never its parameters or PostgreSQL’s message', () => {
    const secret = 'card 4111 1111 1111 1111';
    const error = Object.assign(new Error(`invalid input syntax for type json: "${secret}"`), { code: '22P02' });
    new ContentFreeQueryLogger().logQueryError(error, `INSERT INTO "s".decisions SELECT * FROM jsonb_populate_recordset(NULL, $1::jsonb)`, [secret]);
    expect(lines).toEqual(['error query failed (SQLSTATE 22P02): INSERT INTO "s".decisions ...']);
    expect(lines.join('\n')).not.toContain('4111');
  });
});
