// The migrations' command line (npm run db:migrate, db:migration:new): applying them is
// prisma/applyMigrations.ts, writing a new one prisma/newMigration.ts.
//
//   tsx prisma/migrate.ts deploy                    apply pending migrations to DATABASE_URL
//   tsx prisma/migrate.ts status                    list applied / pending migrations
//   tsx prisma/migrate.ts new <name> [--empty]      new migration: diff of migrations -> schema.prisma
//   tsx prisma/migrate.ts resolve --rolled-back <name>   mark a failed migration as rolled back
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyMigrations, markRolledBack, MigrationError, migrationRows, readMigrations } from './applyMigrations.js';
import { createMigration } from './newMigration.js';

async function cli(argv: string[]): Promise<number> {
  await import('dotenv/config');
  const [command, ...rest] = argv;
  const url = () => {
    const u = process.env.DATABASE_URL;
    if (!u) throw new Error('DATABASE_URL is not set');
    return u;
  };
  switch (command) {
    case 'deploy': {
      const { applied } = await applyMigrations(url(), { log: console.log });
      console.log(applied.length ? `applied ${applied.length} migration(s)` : 'no pending migrations');
      return 0;
    }
    case 'status': {
      const rows = await migrationRows(url());
      for (const m of await readMigrations()) {
        const r = rows.filter((x) => x.migration_name === m.name && !x.rolled_back_at).pop();
        console.log(`${r ? (r.finished_at ? 'applied' : 'FAILED ') : 'pending'}  ${m.name}`);
      }
      return 0;
    }
    case 'new': {
      const name = rest.find((a) => !a.startsWith('--'));
      if (!name) throw new Error('usage: tsx prisma/migrate.ts new <name> [--empty]');
      // An engine panic surfaces as an uncaught trap; its message is in the panic registry.
      process.once('uncaughtException', (e) => {
        const panic = (globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { message: string } }).PRISMA_WASM_PANIC_REGISTRY
          ?.message;
        console.error(`schema engine failed: ${panic || e}`);
        process.exit(1);
      });
      let folder: string | null;
      try {
        folder = await createMigration(name, { empty: rest.includes('--empty') });
      } catch (e) {
        if (
          (e as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' &&
          (e as { code?: string }).code !== 'MODULE_NOT_FOUND'
        )
          throw e;
        console.error(
          `@prisma/schema-engine-wasm is not installed (it is a devDependency). With internet and a dev database in DATABASE_URL:\n` +
            `  npx prisma migrate dev --create-only --name ${name}`,
        );
        return 1;
      }
      console.log(
        folder
          ? `created ${folder}/migration.sql`
          : 'schema.prisma matches the migrations: nothing to do (use --empty for a hand-written migration)',
      );
      return 0;
    }
    case 'resolve': {
      const name = rest[rest.indexOf('--rolled-back') + 1];
      if (!rest.includes('--rolled-back') || !name)
        throw new Error('usage: tsx prisma/migrate.ts resolve --rolled-back <name>');
      await markRolledBack(url(), name);
      console.log(`marked ${name} as rolled back`);
      return 0;
    }
    default:
      console.error(
        'usage: tsx prisma/migrate.ts deploy | status | new <name> [--empty] | resolve --rolled-back <name>',
      );
      return 2;
  }
}

function isMain(): boolean {
  try {
    return !!process.argv[1] && realpathSync(resolve(process.argv[1])) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(e instanceof MigrationError || e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
