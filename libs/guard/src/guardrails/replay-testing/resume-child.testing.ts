// One process of a guarded run whose verdicts are journaled in a durable Mastra storage, for
// verdict-replay.e2e.spec.ts. The run: the model asks for refunds c1 (50) and c2 (500) in one turn,
// then c3 (3), then answers. The `limit` guardrail denies over 100 and appends each amount it is
// asked about to calls.log (flushed, so a killed process's calls are counted). With HANG=1 the c3
// refund never returns: it prints `in-tool c3` and waits to be killed.
// Usage: node --conditions=@gatehouse/source --import ./register-ts.mjs resume-child.testing.ts <dir> <runId>
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { RequestContext } from '@mastra/core/request-context';
import { MastraCompositeStore } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { createGuardedAgent } from '../../agent/guarded-agent.js';
import { AuditLogger } from '../../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../../context.js';
import { scriptedModel } from '../../testing/scripted-model.js';
import { createMastraVerdictJournal } from '../mastra-verdict-journal.js';
import { type Guardrail } from '../types.js';
import { FileThreadState } from './file-thread-state.testing.js';

const [dir, runId] = process.argv.slice(2) as [string, string];
const hang = process.env['HANG'] === '1';
const firstAmount = Number(process.env['C1_AMOUNT'] ?? '50');

function appendFlushed(file: string, line: string): void {
  const fd = openSync(path.join(dir, file), 'a');
  try {
    writeSync(fd, `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const limit: Guardrail = {
  name: 'limit',
  placements: ['tool-args'],
  detections: ['refund.over-limit'],
  check: ({ value }) => {
    const amount = (value as { amount: number }).amount;
    appendFlushed('calls.log', String(amount));
    return amount > 100 ? { action: 'deny', outcome: 'complete', detections: ['refund.over-limit'], reason: 'limit.exceeded' } : { action: 'allow', outcome: 'complete', detections: [] };
  },
};

const refund = createTool({
  id: 'refund',
  description: 'Refund an order',
  inputSchema: z.object({ amount: z.number() }),
  execute: async ({ amount }) => {
    appendFlushed('refunds.log', String(amount));
    if (hang && amount === 3) {
      process.stdout.write('in-tool c3\n');
      // A timer keeps the event loop alive: a bare never-settling promise lets Node exit with 13
      // (unsettled top-level await) before the test's SIGKILL arrives.
      await new Promise(() => setInterval(() => undefined, 60_000));
    }
    return { refunded: amount };
  },
});

const storage = new MastraCompositeStore({ id: 'crash-test', domains: { threadState: new FileThreadState(path.join(dir, 'storage')) } });
const audit = new AuditLogger();
const agent = createGuardedAgent({
  id: 'refunds',
  name: 'Refunds',
  instructions: 'Refund orders.',
  allowedRoles: ['operator'],
  tools: { refund },
  guardrails: [limit],
  audit,
  verdictJournal: createMastraVerdictJournal({ storage }),
  maxSteps: 4,
  model: scriptedModel({
    steps: [
      { toolCalls: [{ toolName: 'refund', toolCallId: 'c1', args: { amount: firstAmount } }, { toolName: 'refund', toolCallId: 'c2', args: { amount: 500 } }] },
      { toolCall: { toolName: 'refund', toolCallId: 'c3', args: { amount: 3 } } },
      { text: 'done' },
    ],
  }) as never,
});

const requestContext = new RequestContext();
requestContext.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
requestContext.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refunds', entryPath: 'crash-test' });

const result = await agent.generate('refund the orders', { requestContext, runId });
const decisions = audit.events().filter((e) => e.boundary === 'guardrail').map((e) => ({ toolCallId: e.detail?.['toolCallId'], code: e.code, replayed: e.detail?.['replayed'] === true }));
process.stdout.write(`${JSON.stringify({ stopReason: result.stopReason, text: result.text, decisions })}\n`);
