import { defineConfig } from 'prisma/config';

// Only `prisma generate` uses this file: migrations are applied by
// `npm run db:migrate` (src/db/migrate-cli.ts), which runs Prisma's schema
// engine as WebAssembly and needs no native binary.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
