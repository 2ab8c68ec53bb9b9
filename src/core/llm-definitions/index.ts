/**
 * What the service tells language models about its tools (API.md "LLM and
 * MCP interop"), one import for its callers: the definitions in each
 * provider's format (formats.ts), which actions they list and in what order
 * (selection.ts, ranked by ranking.ts), and the system prompt (prompt.ts).
 */
export {
  DEFINITION_FORMATS,
  argsSchema,
  buildDefinitions,
  mcpAnnotations,
  type AnthropicDefinitions,
  type AnthropicToolDefinition,
  type ArgsJsonSchema,
  type DefinitionFormat,
  type DefinitionsByFormat,
  type McpDefinitions,
  type McpToolAnnotations,
  type McpToolDefinition,
  type OpenAiDefinitions,
  type OpenAiFunction,
  type OpenAiToolDefinition,
  type ToolDefinitions,
} from './formats';
export { dependencyOrder } from './order';
export { systemPrompt, type PromptOptions } from './prompt';
export { FIELD_WEIGHTS, rankActions, words, type RankedAction } from './ranking';
export { allowedActions, selectActions, type SelectOptions } from './selection';
export { firstSentence } from './sentences';
