import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { exportEventJsonSchemas, recordKey, TOPIC_LIST, TOPICS } from './index.js';

describe('topic catalog', () => {
  it('names every topic gatehouse.<stream>.v<N> (a reply topic of request/reply adds .reply)', () => {
    for (const topic of TOPIC_LIST) expect(topic.name).toMatch(/^gatehouse\.[a-z-]+\.v\d+(\.reply)?$/);
  });

  it('stamps every topic with the broker append time, so replays see the same clock', () => {
    for (const topic of TOPIC_LIST) expect(topic.configs['message.timestamp.type']).toBe('LogAppendTime');
  });

  it('compacts only the policies topic', () => {
    const compacted = TOPIC_LIST.filter((t) => t.configs['cleanup.policy'] === 'compact').map((t) => t.name);
    expect(compacted).toEqual([TOPICS.policies.name]);
  });

  it('keys audit records by tenant and run, others by subject', () => {
    expect(recordKey({ tenant: 'acme', subject: 'run-1' }, TOPICS.audit)).toBe('acme/run-1');
    expect(recordKey({ tenant: 'acme', subject: 'appr-1' }, TOPICS.approvals)).toBe('appr-1');
  });
});

describe('JSON Schema export', () => {
  const dir = path.resolve(import.meta.dirname, '../json-schema');

  it('exports one schema per catalog event, and the committed files are current', () => {
    const exported = exportEventJsonSchemas();
    const eventCount = TOPIC_LIST.reduce((n, t) => n + t.events.length, 0);
    expect(exported).toHaveLength(eventCount);
    expect(readdirSync(dir).sort()).toEqual(exported.map((e) => `${e.id}.json`).sort());
    for (const { id, schema } of exported) {
      const committed = JSON.parse(readFileSync(path.join(dir, `${id}.json`), 'utf8'));
      // If this fails: npm run schemas -w @gatehouse/contracts
      expect(committed).toEqual(schema);
    }
  });

  it('requires the envelope fields in every schema', () => {
    for (const { schema } of exportEventJsonSchemas()) {
      expect(schema['required']).toEqual(
        expect.arrayContaining(['id', 'type', 'version', 'source', 'time', 'tenant', 'subject', 'payload']),
      );
    }
  });
});
