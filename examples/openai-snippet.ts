/**
 * The service's tools in an OpenAI chat completion: definitions in, tool calls
 * routed through negotiate, results back as `tool` messages. Needs network and
 * OPENAI_API_KEY, so it is type-checked in CI but never run there.
 *
 * TOKEN is the service's bearer token (an API key), as for agent-loop.ts.
 *
 *   OPENAI_API_KEY=... TOKEN=... npx tsx examples/openai-snippet.ts "Store [3,1,4] as numbers and summarize it"
 */
import OpenAI from 'openai';
import { negotiate, tokenFromEnv } from './agent-loop';

type ChatCompletionTool = OpenAI.Chat.Completions.ChatCompletionTool;
type ChatCompletionMessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;

export async function chatWithTools(options: {
  client: OpenAI;
  model: string;
  baseUrl: string;
  /** The service's bearer token. */
  token: string;
  conversationId: string;
  userMessage: string;
  maxRounds?: number;
}): Promise<string | null> {
  const { client, model, baseUrl, token, conversationId } = options;
  const headers = { authorization: `Bearer ${token}` };
  // Provider-safe `tool_action` names; the system prompt explains the participants.
  const defs = await fetch(`${baseUrl}/tools/definitions?format=openai`, { headers });
  const { tools } = (await defs.json()) as { tools: ChatCompletionTool[] };
  const system = await (await fetch(`${baseUrl}/tools/prompt?conversationId=${conversationId}`, { headers })).text();
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: system },
    { role: 'user', content: options.userMessage },
  ];

  for (let round = 0; round < (options.maxRounds ?? 8); round++) {
    const completion = await client.chat.completions.create({ model, messages, tools });
    const message = completion.choices[0]?.message;
    if (!message) return null;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content;

    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const args = JSON.parse(call.function.arguments || '{}') as Record<string, unknown>;
      // The service routes the name, checks args and permissions, and runs the action.
      // A `permission_required` result carries `approvalReason`: the model can relay it,
      // and the conversation's owner approves with PUT /conversations/{id}/permissions/{tool}.
      const { body } = await negotiate(baseUrl, token, conversationId, call.function.name, args);
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(body) });
    }
  }
  return null;
}

async function main(): Promise<void> {
  const apiKey = process.env.OPENAI_API_KEY;
  if (!apiKey) throw new Error('Set OPENAI_API_KEY');
  const token = tokenFromEnv();
  const answer = await chatWithTools({
    client: new OpenAI({ apiKey }),
    model: process.env.OPENAI_MODEL ?? 'gpt-4.1-mini',
    baseUrl: process.env.BASE_URL ?? 'http://localhost:3000',
    token,
    conversationId: process.env.CONVERSATION_ID ?? `openai-${Date.now()}`,
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
