import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { type RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { z } from 'zod';
import { scriptedModel } from '../../testing/scripted-model.js';
import { type AnyConnector, type Connector, invokeConnector } from '../connector.js';

/** The four ways a connector can be reached. */
export type ConnectorEntryPoint = 'agent-loop' | 'workflow-step' | 'nested-tool' | 'direct';
export const CONNECTOR_ENTRY_POINTS: readonly ConnectorEntryPoint[] = ['agent-loop', 'workflow-step', 'nested-tool', 'direct'];

/** What came back from one call: a value, or an error (as thrown, or as Mastra reported it). */
export type EntryPointOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

let serial = 0;

/**
 * Calls `connector` through one entry point with `input` and `requestContext`. The agent
 * loop uses a real Agent whose scripted model calls the tool with `toolCallId`.
 */
export async function callThrough(
  entryPoint: ConnectorEntryPoint,
  connector: AnyConnector,
  input: unknown,
  requestContext: RequestContext,
  toolCallId = 'call-1',
): Promise<EntryPointOutcome> {
  serial += 1;
  switch (entryPoint) {
    case 'direct':
      try {
        return { ok: true, value: await invokeConnector(connector as Connector, input, { requestContext, toolCallId }) };
      } catch (error) {
        return { ok: false, error };
      }
    case 'agent-loop': {
      const name = connector.id.replace(/[^a-zA-Z0-9_-]/g, '_');
      const agent = new Agent({
        id: `conformance-agent-${serial}`,
        name: 'conformance',
        instructions: 'call the tool',
        model: scriptedModel({ steps: [{ toolCall: { toolName: name, toolCallId, args: input } }, { text: 'done' }] }) as never,
        tools: { [name]: connector as never },
      });
      new Mastra({ agents: { a: agent }, logger: false });
      const result = await agent.generate('go', { requestContext, maxSteps: 2 });
      const toolResult = (result.toolResults as { payload?: { result?: unknown; isError?: boolean } }[] | undefined)?.[0]?.payload;
      if (!toolResult) return { ok: false, error: new Error('the tool was not called') };
      if (toolResult.isError || toolResult.result instanceof Error) return { ok: false, error: toolResult.result };
      return { ok: true, value: toolResult.result };
    }
    case 'workflow-step': {
      // Mastra builds a step from a tool only when it declares an output schema; otherwise a
      // step calls the connector's execute with the workflow context, as step code would.
      const hasOutput = (connector as { outputSchema?: unknown }).outputSchema !== undefined;
      const step = hasOutput
        ? createStep(connector as never)
        : createStep({
            id: `conformance-step-${serial}`,
            inputSchema: z.any(),
            outputSchema: z.any(),
            execute: async ({ inputData, requestContext: rc, runId }) =>
              ((connector as Connector).execute as (i: unknown, c: unknown) => Promise<unknown>)(inputData, { requestContext: rc, workflow: { runId, workflowId: `conformance-wf-${serial}` } }),
          });
      const workflow = createWorkflow({ id: `conformance-wf-${serial}`, inputSchema: z.any(), outputSchema: z.any() }).then(step as never).commit();
      new Mastra({ workflows: { wf: workflow }, logger: false });
      const run = await workflow.createRun();
      const result = (await run.start({ inputData: input, requestContext })) as { status: string; result?: unknown; error?: unknown };
      return result.status === 'success' ? { ok: true, value: result.result } : { ok: false, error: result.error };
    }
    case 'nested-tool': {
      // A plain tool that calls the connector as tool code would: through its execute.
      const outer = createTool({
        id: `conformance-outer-${serial}`,
        description: 'calls the connector',
        inputSchema: z.any(),
        execute: async (inner, context) => ((connector as Connector).execute as (i: unknown, c: unknown) => Promise<unknown>)(inner, context),
      });
      try {
        return { ok: true, value: await (outer.execute as (i: unknown, c: unknown) => Promise<unknown>)(input, { requestContext }) };
      } catch (error) {
        return { ok: false, error };
      }
    }
    default: {
      const exhaustive: never = entryPoint;
      return exhaustive;
    }
  }
}
