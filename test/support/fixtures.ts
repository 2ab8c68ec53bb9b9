/** Test data shared by several test files. */

/** The seven bundled tools, sorted by name (API.md "Bundled tools"). */
export const BUNDLED_TOOLS: readonly string[] = [
  'analytics-tool',
  'calculator',
  'data-tool',
  'example-tool',
  'export-tool',
  'math-service',
  'transform-tool',
];

/** A TOOLS_DIR module (factory form) with one read action, `shout-text`. */
export function shoutToolModule(name: string, description: string): string {
  return `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: '${name}', version: '1.0.0', description: '${description}',
  actions: {
    'shout-text': defineAction({
      description: 'Upper-cases text',
      level: 1,
      input: z.object({ text: z.string() }),
      handler: async ({ text }) => ({ shouted: text.toUpperCase() }),
    }),
  },
});
`;
}
