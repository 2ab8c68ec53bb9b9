/** The seed's hello-world tool: one read-level action, useful to check routing end to end. */
import { z } from 'zod';
import { defineAction, defineTool } from '../src/core/tool-interface';

export default defineTool({
  name: 'example-tool',
  version: '1.0.0',
  description: 'Greets someone; a minimal example of a tool.',
  actions: {
    greet: defineAction({
      description: 'Return a greeting for `name` (default "world").',
      level: 1,
      input: z.object({
        name: z.string().min(1).max(200).default('world').describe('Who to greet'),
      }),
      output: z.object({ message: z.string().describe('The greeting') }),
      handler: ({ name }) => ({ message: `Hello, ${name}!` }),
    }),
  },
});
