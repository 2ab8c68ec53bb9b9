/**
 * Arithmetic on two numbers. Shares `add` with math-service on purpose: seed
 * 000's example of two participants offering the same action, so a bare `add`
 * is ambiguous and callers must name the tool.
 */
import { z } from 'zod';
import { ToolError, defineAction, defineTool } from '../src/core/tool-interface';

const ZOperands = z.object({
  a: z.number().describe('First operand'),
  b: z.number().describe('Second operand'),
});

const ZResult = z.object({ result: z.number().describe('The result') });

/** JSON has no Infinity: an overflowing result would silently become null in the response. */
function finite(result: number): { result: number } {
  if (!Number.isFinite(result)) throw new ToolError('invalid_args', 'The result is too large to represent');
  return { result };
}

export default defineTool({
  name: 'calculator',
  version: '1.0.0',
  description: 'Basic arithmetic on two numbers.',
  actions: {
    add: defineAction({
      description: 'Add two numbers: returns { result: a + b }.',
      level: 1,
      input: ZOperands,
      output: ZResult,
      handler: ({ a, b }) => finite(a + b),
    }),
    multiply: defineAction({
      description: 'Multiply two numbers: returns { result: a * b }.',
      level: 1,
      input: ZOperands,
      output: ZResult,
      handler: ({ a, b }) => finite(a * b),
    }),
  },
});
