/**
 * Mathematics beyond plain arithmetic. Declares `add` like calculator does
 * (seed 000: the same action offered by two participants).
 */
import { z } from 'zod';
import { ToolError, defineAction, defineTool } from '../src/core/tool-interface';

/** Enough for any polynomial an agent writes by hand, small enough to stay cheap. */
const MAX_COEFFICIENTS = 64;

/**
 * The definite integral of c0 + c1 x + c2 x^2 + ... from `from` to `to`,
 * through the antiderivative F(x) = sum c_i x^(i+1) / (i+1), evaluated with
 * Horner's rule (fewer roundings than summing powers).
 */
export function integratePolynomial(coefficients: readonly number[], from: number, to: number): number {
  const antiderivative = (x: number): number => coefficients.reduceRight((acc, c, i) => acc * x + c / (i + 1), 0) * x;
  return antiderivative(to) - antiderivative(from);
}

const ZResult = z.object({ result: z.number().describe('The result') });

function finite(result: number): { result: number } {
  if (!Number.isFinite(result)) throw new ToolError('invalid_args', 'The result is too large to represent');
  return { result };
}

export default defineTool({
  name: 'math-service',
  version: '1.0.0',
  description: 'Mathematical operations: addition and exact integration of polynomials.',
  actions: {
    add: defineAction({
      description: 'Add two numbers: returns { result: a + b }.',
      level: 1,
      input: z.object({
        a: z.number().describe('First operand'),
        b: z.number().describe('Second operand'),
      }),
      output: ZResult,
      handler: ({ a, b }) => finite(a + b),
    }),
    integrate: defineAction({
      description:
        'Definite integral of the polynomial c0 + c1*x + c2*x^2 + ... (coefficients in ascending order) from `from` to `to`: returns { result }.',
      level: 1,
      input: z.object({
        coefficients: z
          .array(z.number())
          .min(1)
          .max(MAX_COEFFICIENTS)
          .describe('Polynomial coefficients, constant term first'),
        from: z.number().describe('Lower bound'),
        to: z.number().describe('Upper bound'),
      }),
      output: ZResult,
      handler: ({ coefficients, from, to }) => finite(integratePolynomial(coefficients, from, to)),
    }),
  },
});
