// typescript-eslint's type-checked rules; formatting is prettier's job.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import path from 'node:path';

/**
 * layers/allowed-imports: what a layer may import, as an allow-list. A module
 * specifier passes when it is `node:*`, one of `packages` (or a subpath), or a
 * relative path that resolves inside one of `within` (folders or files,
 * relative to the project root); anything else is reported. Static imports,
 * re-exports, `import type`, `import x = require()`, and literal import() and
 * require() are checked; a computed specifier (the tool loader's) cannot be.
 */
const allowedImports = {
  meta: {
    type: 'problem',
    schema: [
      {
        type: 'object',
        properties: {
          within: { type: 'array', items: { type: 'string' } },
          packages: { type: 'array', items: { type: 'string' } },
          why: { type: 'string' },
        },
        required: ['within', 'packages', 'why'],
        additionalProperties: false,
      },
    ],
    messages: { notAllowed: "'{{source}}' is not allowed here: {{why}}." },
  },
  create(context) {
    const { within, packages, why } = context.options[0];
    const root = context.cwd;
    const withoutExt = (p) => p.replace(/\.(ts|js|mjs|cjs)$/, '');
    const allowedPaths = within.map((w) => withoutExt(path.resolve(root, w)));
    const allowed = (source) => {
      if (source.startsWith('node:')) return true;
      if (packages.some((p) => source === p || source.startsWith(`${p}/`))) return true;
      if (!source.startsWith('.')) return false;
      const target = withoutExt(path.resolve(path.dirname(context.filename), source));
      return allowedPaths.some((w) => target === w || target.startsWith(`${w}${path.sep}`));
    };
    const check = (node) => {
      if (node?.type === 'Literal' && typeof node.value === 'string' && !allowed(node.value)) {
        context.report({ node, messageId: 'notAllowed', data: { source: node.value, why } });
      }
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => n.source && check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSImportEqualsDeclaration: (n) =>
        n.moduleReference.type === 'TSExternalModuleReference' && check(n.moduleReference.expression),
      CallExpression: (n) =>
        n.callee.type === 'Identifier' &&
        n.callee.name === 'require' &&
        n.arguments.length === 1 &&
        check(n.arguments[0]),
    };
  },
};
const layers = { rules: { 'allowed-imports': allowedImports } };

export default tseslint.config(
  {
    ignores: [
      'prisma.config.ts',
      'dist/',
      'node_modules/',
      'src/generated/',
      'coverage/',
      '.data/',
      'openapi/',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The domain core knows storage and transports only through its own ports
    // (src/core/ports/): adapters in src/db, src/http and src/mcp import the
    // core, never the reverse. An allow-list, so a new import must be argued for here.
    files: ['src/core/**/*.ts'],
    plugins: { layers },
    rules: {
      'layers/allowed-imports': [
        'error',
        {
          within: ['src/core'],
          packages: ['zod'],
          why: 'src/core imports only itself, zod and node:* (declare a port in src/core/ports/; adapters live in src/db, src/http, src/mcp)',
        },
      ],
    },
  },
  {
    // A tool is a plugin: it sees the tool interface it is given, never the service's insides.
    files: ['tools/**/*.ts'],
    plugins: { layers },
    rules: {
      'layers/allowed-imports': [
        'error',
        {
          within: ['src/core/tool-interface.ts'],
          packages: ['zod'],
          why: 'a tool imports only the tool interface (src/core/tool-interface.ts), zod and node:*',
        },
      ],
    },
  },
  {
    // Tests assert on loosely typed JSON bodies from supertest.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
