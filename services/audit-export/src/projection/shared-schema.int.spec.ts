import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type AuditApp, startAuditApp } from '../testing/audit-app.js';
import { decision } from '../testing/decisions.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

// Two environments (topic namespaces) projected into one schema: their partition/offset pairs
// overlap, and neither may hide the other's decisions.
let db: TestDatabase;
const apps: AuditApp[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await db?.drop();
});

describe('decisions projection', () => {
  it('keeps decisions of two namespaces at the same partition and offset apart', async () => {
    const kafka = testKafka('audit-shared-schema');
    const ids: string[] = [];
    for (const run of ['run-a', 'run-b']) {
      const namespace = await provisionedNamespace(kafka);
      const app = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'shared_it', export: { name: 'siem', from: { kind: 'earliest' } } });
      apps.push(app);
      const producer = await EventProducer.connect(kafka, { namespace });
      const event = decision({ runId: run }, { tenant: 'acme', subject: 'same-key', seq: 1 });
      ids.push(event.id);
      await producer.publish('audit', event); // same key, so the same partition, offset 0 in both
      await producer.close();
      await waitFor(async () => ((await app.get<{ decisions: unknown[] }>(`/v1/runs/${run}/timeline`)).body.decisions?.length === 1 ? true : undefined), { what: `${run} in the projection` });
    }
    const all = (await apps[0]!.get<{ items: { id: string }[] }>('/v1/decisions?limit=10')).body.items.map((d) => d.id);
    expect(all.sort()).toEqual([...ids].sort());
  });
});
