// Throw-away PostgreSQL databases for tests, and the rule for when PostgreSQL is missing:
// with REQUIRE_POSTGRES=1 a missing server fails the run; without it the PostgreSQL suites are
// skipped loudly (a warning on stderr and a skipped test that names the reason).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let availability: Promise<boolean> | undefined;

export function pgAvailable(): Promise<boolean> {
  availability ??= (async () => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return availability;
}

export type EngineName = 'sqlite' | 'postgres';

/** The engines a test file must run on. Throws when PostgreSQL is required but unreachable. */
export async function testEngines(): Promise<{ engines: EngineName[]; skipReason?: string }> {
  if (await pgAvailable()) return { engines: ['sqlite', 'postgres'] };
  const reason = `PostgreSQL not reachable at ${PG_ADMIN_URL.replace(/\/\/[^@]*@/, '//')}: PostgreSQL suite SKIPPED`;
  if (process.env.REQUIRE_POSTGRES === '1') throw new Error(`REQUIRE_POSTGRES=1 but ${reason}`);
  process.stderr.write(`\n!!! WARNING: ${reason} !!!\n\n`);
  return { engines: ['sqlite'], skipReason: reason };
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates a fresh database `bp_test_<random>`; drop() removes it (terminating leftover sessions). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `bp_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
