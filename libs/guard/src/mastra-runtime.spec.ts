import { describe, expect, it } from '@jest/globals';
import { Agent } from '@mastra/core/agent';

// A scripted V3 model: no network, one text answer.
function scriptedModel(text: string) {
  const usage = {
    inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 2, text: 2, reasoning: 0 },
  };
  return {
    specificationVersion: 'v3' as const,
    provider: 'gatehouse-test',
    modelId: 'scripted',
    supportedUrls: {},
    doGenerate: async () => ({
      content: [{ type: 'text' as const, text }],
      finishReason: { unified: 'stop' as const, raw: 'stop' },
      usage,
      warnings: [],
    }),
    doStream: async () => {
      throw new Error('not scripted');
    },
  };
}

describe('@mastra/core under native-ESM Jest on Node 22', () => {
  it('loads the agent module and runs generate() against a scripted model', async () => {
    const agent = new Agent({
      id: 'toolchain-check',
      name: 'toolchain-check',
      instructions: 'answer briefly',
      model: scriptedModel('pong') as never,
    });
    const result = await agent.generate('ping');
    expect(result.text).toBe('pong');
  });
});
