/**
 * The service's tools in an Anthropic Messages call: definitions in, `tool_use`
 * blocks routed through negotiate, `tool_result` blocks back. Needs network
 * and ANTHROPIC_API_KEY, so it is type-checked in CI but never run there.
 *
 * TOKEN is the service's bearer token (an API key), as for agent-loop.ts.
 *
 *   ANTHROPIC_API_KEY=... TOKEN=... npx tsx examples/anthropic-snippet.ts "Store [3,1,4] as numbers and summarize it"
 */
import Anthropic from '@anthropic-ai/sdk';
import { negotiate, tokenFromEnv } from './agent-loop';

export async function chatWithTools(options: {
  client: Anthropic;
  model: string;
  baseUrl: string;
  /** The service's bearer token. */
  token: string;
  conversationId: string;
  userMessage: string;
  maxRounds?: number;
}): Promise<string> {
  const { client, model, baseUrl, token, conversationId } = options;
  const headers = { authorization: `Bearer ${token}` };
  // Provider-safe `tool_action` names; the system prompt explains the participants.
  const defs = await fetch(`${baseUrl}/tools/definitions?format=anthropic`, { headers });
  const { tools } = (await defs.json()) as { tools: Anthropic.Messages.Tool[] };
  const system = await (await fetch(`${baseUrl}/tools/prompt?conversationId=${conversationId}`, { headers })).text();
  const messages: Anthropic.Messages.MessageParam[] = [{ role: 'user', content: options.userMessage }];

  for (let round = 0; round < (options.maxRounds ?? 8); round++) {
    const response = await client.messages.create({ model, max_tokens: 1024, system, tools, messages });
    messages.push({ role: 'assistant', content: response.content });
    if (response.stop_reason !== 'tool_use') {
      return response.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    }

    const results: Anthropic.Messages.ToolResultBlockParam[] = [];
    for (const block of response.content) {
      if (block.type !== 'tool_use') continue;
      // The service routes the name, checks args and permissions, and runs the action.
      // A `permission_required` result carries `approvalReason`: the model can relay it,
      // and the conversation's owner approves with PUT /conversations/{id}/permissions/{tool}.
      const { body } = await negotiate(
        baseUrl,
        token,
        conversationId,
        block.name,
        block.input as Record<string, unknown>,
      );
      results.push({
        type: 'tool_result',
        tool_use_id: block.id,
        content: JSON.stringify(body),
        is_error: !body.success,
      });
    }
    messages.push({ role: 'user', content: results });
  }
  return '';
}

async function main(): Promise<void> {
  const apiKey = process.env.ANTHROPIC_API_KEY;
  if (!apiKey) throw new Error('Set ANTHROPIC_API_KEY');
  const token = tokenFromEnv();
  const answer = await chatWithTools({
    client: new Anthropic({ apiKey }),
    model: process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-5',
    baseUrl: process.env.BASE_URL ?? 'http://localhost:3000',
    token,
    conversationId: process.env.CONVERSATION_ID ?? `anthropic-${Date.now()}`,
    userMessage: process.argv[2] ?? 'Greet Ada, then add 2 and 40 with the calculator.',
  });
  console.log(answer);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
