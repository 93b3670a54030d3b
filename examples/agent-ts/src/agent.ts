/**
 * The agent: one user request through `@anthropic-ai/sdk`'s tool runner, with Claude's
 * memory tool kept in ContextQ. The client reads `ANTHROPIC_BASE_URL` and
 * `ANTHROPIC_API_KEY`, so the same code talks to the real API or to a served fake.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaMemoryTool } from '@anthropic-ai/sdk/helpers/beta/memory';
import type { BetaMessage } from '@anthropic-ai/sdk/resources/beta';

import { ContextQMemory, type ContextQOptions } from './contextqMemory.ts';

export const MODEL = 'claude-sonnet-4-5';

export interface AgentOptions {
  client?: Anthropic;
  contextq?: ContextQOptions;
}

/** Answer `prompt`, reading and writing memory files under `/memories` in ContextQ. */
export async function ask(prompt: string, options: AgentOptions = {}): Promise<BetaMessage> {
  const client = options.client ?? new Anthropic();
  const memory = betaMemoryTool(new ContextQMemory(options.contextq));
  const runner = client.beta.messages.toolRunner({
    model: MODEL,
    max_tokens: 1024,
    tools: [memory],
    messages: [{ role: 'user', content: prompt }],
    // The memory tool's results must survive context editing: exclude it (seed 000).
    context_management: {
      edits: [
        {
          type: 'clear_tool_uses_20250919',
          trigger: { type: 'input_tokens', value: 30_000 },
          exclude_tools: ['memory'],
        },
      ],
    },
    betas: ['context-management-2025-06-27'],
  });
  return runner.runUntilDone();
}

/** The reply's text blocks, joined. */
export function textOf(message: BetaMessage): string {
  return message.content
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('');
}
