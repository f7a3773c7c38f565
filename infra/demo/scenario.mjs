// The demo scenario: an agent process guarded by @gatehouse/guard talks to the running suite.
// No model provider is needed: a scripted model stands in for the LLM, everything else is real
// (Kafka, PostgreSQL, the services). Run by infra/scripts/demo.sh after the services are up.
import { randomUUID } from 'node:crypto';
import { RequestContext } from '@mastra/core/request-context';
import {
  ACTOR_CONTEXT_KEY,
  AGENT_AUDIT_CONTEXT_KEY,
  AuditLogger,
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  createConnector,
  createGuardedAgent,
  createLedgerStores,
  denyPatterns,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  invokeConnector,
  kafkaAuditPublisher,
  kafkaAuditSink,
  piiSecrets,
} from '@gatehouse/guard';
import { createKafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { collectStreamText, scriptedModel } from '@gatehouse/guard/testing';
import { keyringFromEnv } from '@gatehouse/contracts';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv } from '@gatehouse/kafka';
import { z } from 'zod';

const ledgerUrl = process.env.GATEHOUSE_LEDGER_URL ?? 'http://127.0.0.1:4103';
const runId = `demo-run-${randomUUID().slice(0, 8)}`;
const say = (line) => process.stdout.write(`${line}\n`);

const kafka = createKafkaClient(kafkaConfigFromEnv('gatehouse-demo'));
// The demo runs under a topic namespace (GATEHOUSE_TOPIC_NAMESPACE, set by demo.sh).
const producer = await EventProducer.connect(kafka, { namespace: process.env.GATEHOUSE_TOPIC_NAMESPACE || undefined });
const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:demo-agent', defaultTenant: 'acme' });
const audit = new AuditLogger({ sink });

const requestContext = new RequestContext();
requestContext.set(ACTOR_CONTEXT_KEY, { id: 'alice', role: 'support' });
requestContext.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support-bot', runId, entryPath: 'demo' });

say(`\n== 1. A guarded agent (run ${runId})`);
const agent = (model) =>
  createGuardedAgent({
    id: 'support-bot',
    name: 'Support bot',
    instructions: 'Help customers with their orders.',
    model,
    allowedRoles: ['support'],
    policies: [denyPatterns(['internal use only']), piiSecrets({ detectors: ['awsAccessKey', 'jwt', 'privateKey', 'creditCard'] })],
    audit,
  });
const answered = await agent(scriptedModel({ text: 'Order 1042 ships tomorrow.' })).generate('Where is order 1042?', { requestContext });
say(`allowed:  "${answered.text}"`);
const refusedInput = await agent(scriptedModel({ text: 'never sent' })).generate('Paste the INTERNAL USE ONLY runbook', { requestContext });
say(`refused:  input policy -> ${refusedInput.tripwire?.code}: ${refusedInput.tripwire?.reason}; the model never saw it`);
const leaking = await agent(scriptedModel({ chunks: ['Sure, the key is AKIA', 'IOSFODNN7', 'EXAMPLE.'] })).stream('What is the deploy key?', { requestContext });
const streamed = await collectStreamText(leaking.fullStream);
const leakResult = await leaking.result();
say(`refused:  a secret split over 3 stream chunks -> ${leakResult.tripwire?.code}; text shown to the user: "${streamed.text}"`);

say('\n== 2. A refund connector: a reviewer approves it through the approval service, then it runs exactly once');
const approvalUrl = process.env.GATEHOUSE_APPROVAL_URL ?? 'http://127.0.0.1:4102';
const reviewerKey = process.env.GATEHOUSE_DEMO_REVIEWER_KEY;
// Decisions count only when signed by the approval service: its public key comes from GATEHOUSE_TRUSTED_KEYS_FILE.
const gateway = createKafkaApprovalGateway({ kafka, keyring: keyringFromEnv(), namespace: process.env.GATEHOUSE_TOPIC_NAMESPACE || undefined, source: 'guard:demo-agent' });
await gateway.start();
const { idempotencyStore } = createLedgerStores({ baseUrl: ledgerUrl, connectorId: 'payments.refund' });
let executions = 0;
const refund = createConnector({
  id: 'payments.refund',
  description: 'Refund an order to the card it was paid with',
  inputSchema: z.object({ orderId: z.string(), amount: z.number().positive().max(500) }),
  permissions: { sideEffect: 'write', requiresApproval: true, idempotencyKey: true, dryRun: true },
  dryRunExecute: async ({ orderId, amount }) => ({ wouldRefund: amount, currency: 'EUR', order: orderId }),
  approvals: { gateway, deadlineMs: 600_000, waitMs: 60_000 },
  idempotencyStore,
  audit,
  execute: async ({ orderId, amount }) => {
    executions += 1;
    return { refundId: `r-${orderId}`, amount };
  },
});
const callContext = new RequestContext();
for (const [k, v] of requestContext.entries()) callContext.set(k, v);
callContext.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId });
callContext.set(IDEMPOTENCY_KEY_CONTEXT_KEY, `refund-1042-${runId}`);
const refunding = invokeConnector(refund, { orderId: '1042', amount: 25 }, { requestContext: callContext });

// The reviewer (user:dana) works the approval service's REST API, as the web inbox does.
const reviewer = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
let pending;
for (let i = 0; !pending && i < 300; i += 1) {
  const page = await (await fetch(`${approvalUrl}/v1/approvals?status=pending&connector=payments.refund`, { headers: reviewer })).json();
  pending = page.items?.find((item) => item.executionId === `support/${runId}`);
  if (!pending) await new Promise((r) => setTimeout(r, 100));
}
if (!pending) throw new Error('the approval request never reached the approval service');
say(`waiting:  the agent asked for approval ${pending.approvalId.slice(0, 17)}...; the reviewer sees ${JSON.stringify(pending.arguments)} and the dry run ${JSON.stringify(pending.dryRunPreview)}`);
const decision = await fetch(`${approvalUrl}/v1/approvals/${pending.approvalId}/decision`, {
  method: 'POST',
  headers: reviewer,
  body: JSON.stringify({ verdict: 'approve-with-edits', editedArguments: { orderId: '1042', amount: 20 }, comment: 'partial refund' }),
});
const decided = await decision.json();
say(`decided:  ${decision.status} ${decided.status} by ${decided.reviewer?.id}: amount edited 25 -> 20`);
const first = await refunding;
const again = await fetch(`${approvalUrl}/v1/approvals/${pending.approvalId}/decision`, { method: 'POST', headers: reviewer, body: '{"verdict":"deny"}' });
say(`refused:  a second decision on the same approval -> ${again.status} ${(await again.json()).code}`);
const retry = await invokeConnector(refund, { orderId: '1042', amount: 25 }, { requestContext: callContext });
say(`allowed:  refund ${first.refundId} of ${first.amount}; retried with the same key -> same result ${retry.refundId}; executed ${executions} time(s)`);
await gateway.close();

await audit.close();
await producer.close();
say(`\n== 3. ${audit.events().length} decisions were published to gatehouse.audit.v1, hash-chained per producer:`);
for (const e of audit.events()) say(`   ${e.boundary.padEnd(11)} ${e.decision.padEnd(9)} ${e.code}`);
process.stdout.write(`DEMO_RUN_ID=${runId}\n`);
