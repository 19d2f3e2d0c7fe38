// Prisma CLI configuration. The datasource URL is optional here on purpose: `prisma generate`
// must work without a database (and without DATABASE_URL), e.g. during `npm install`.
import 'dotenv/config';
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/switchyard' },
});
