// typescript-eslint's type-checked rules; formatting is prettier's job.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

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
    // (src/core/ports.ts): adapters in src/db and src/http import the core, never the reverse.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['pg', 'pg/*', 'pg-*', '@prisma/*', 'prisma', '**/generated/**'],
              message: 'src/core declares ports (src/core/ports.ts); database code lives in src/db.',
            },
            {
              group: ['express', 'express/*', '@tsoa/*', 'tsoa'],
              message: 'src/core knows no transport; map its codes in src/http or src/mcp.',
            },
            {
              group: ['**/db', '**/db/**', '**/http', '**/http/**', '**/mcp', '**/mcp/**', '**/controllers/**'],
              message: 'src/core must not import its adapters (src/db, src/http, src/mcp, src/controllers).',
            },
          ],
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
