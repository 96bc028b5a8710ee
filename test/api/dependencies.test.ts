// Dependencies in their place: what the service imports at run time (src/, the dist/ bundles, the
// install step's scripts/) is a dependency, never a dev dependency, and every dependency is used so;
// and a production install (`npm ci --omit=dev`: here the installed tree pruned the same way, no
// registry needed) starts with node dist/main.js and serves, functions, metrics and CORS included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { buildDist, ROOT } from '../../src/bundles.ts';
import { createTestDatabase, testEngines } from '../support/postgres.ts';
import { callServer, startServer } from '../support/server-process.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
const BUILTIN = new Set(builtinModules);

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p, ext) : ext.test(name) ? [p] : [];
  });
}

// a source's imports and requires, and createRequire(...)('x')
const SOURCE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*|\)\(\s*)['"]([^'"]+)['"]/g;
// A bundle's: the packages it bundled are CommonJS whose requires of what stays outside became
// __require('x'); a bare require('x') there is text the bundled code generates (ajv's compiled
// validators name their helpers so), not an import, and `)('x')` is any call's.
const BUNDLE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\b__require\s*\(\s*|\bcreateRequire\([^()]*\)\(\s*)['"]([^'"]+)['"]/g;

/** The packages a file loads at run time: static and dynamic imports and requires; type-only imports are erased. */
function packagesOf(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/^\s*import type [^;]*;/gm, '');
  const specs = [...text.matchAll(file.endsWith('.js') ? BUNDLE_IMPORT : SOURCE_IMPORT)].map((m) => m[1]!);
  return specs
    // a package name (not a relative path, a builtin, or text that merely reads like an import)
    .filter((s) => /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w./-]*)?$/.test(s) && !BUILTIN.has(s.split('/')[0]!))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!));
}

test('what runs in production imports dependencies only, and every dependency is imported', () => {
  buildDist();
  const runtime = [...files(join(ROOT, 'src'), /\.ts$/), ...files(join(ROOT, 'dist'), /\.js$/), ...files(join(ROOT, 'scripts'), /^build\.(mjs|ts)$/)];
  const used = new Map<string, string>();
  for (const f of runtime) for (const p of packagesOf(f)) used.set(p, relative(ROOT, f));
  for (const [p, where] of used) {
    assert.ok(!(p in pkg.devDependencies), `${where} imports the dev dependency ${p}`);
    assert.ok(p in pkg.dependencies, `${where} imports ${p}, which is not a dependency`);
  }
  for (const p of Object.keys(pkg.dependencies)) assert.ok(used.has(p), `the dependency ${p} is imported by nothing that runs in production: a dev dependency?`);
  // the test-only SMTP server in particular
  assert.ok('smtp-server' in pkg.devDependencies && !('smtp-server' in pkg.dependencies));
});

/** A copy of the service as `npm ci --omit=dev` leaves it: the install's node_modules without the dev dependencies. */
function productionCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bp-prod-'));
  for (const entry of ['package.json', 'package-lock.json', 'dist', 'native']) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true, preserveTimestamps: true });
  mkdirSync(join(dir, 'build'));
  for (const f of readdirSync(join(ROOT, 'build')).filter((f) => f.startsWith('sqlite-deadline.') || f.startsWith('memory-trim.'))) cpSync(join(ROOT, 'build', f), join(dir, 'build', f), { preserveTimestamps: true });
  // hard links: fast, and pruning only removes the copy's links
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')]);
  // but npm rewrites its record of the installed tree in place: a copy of its own, or the prune
  // would write the pruned tree into this checkout's
  const record = join(dir, 'node_modules', '.package-lock.json');
  if (existsSync(record)) {
    rmSync(record);
    cpSync(join(ROOT, 'node_modules', '.package-lock.json'), record);
  }
  execFileSync('npm', ['prune', '--omit=dev', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'pipe' });
  // (a dev dependency that a dependency needs too, such as yaml for @fastify/swagger, stays)
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  for (const dev of Object.keys(pkg.devDependencies).filter((d) => lock.packages[`node_modules/${d}`]?.dev))
    assert.ok(!existsSync(join(dir, 'node_modules', dev)), `${dev} is still installed`);
  return dir;
}

const { engines, skipReason } = await testEngines();
for (const kind of engines) {
  test(`[${kind}] a production install (no dev dependencies) starts with node dist/main.js and serves`, async () => {
    const dir = productionCopy();
    const db = kind === 'postgres' ? await createTestDatabase() : null;
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      server = await startServer({ ...(db ? { DATABASE_URL: db.url } : { DATA_DIR: join(dir, 'data') }) }, 30000, [join(dir, 'dist', 'main.js')], dir);
      const base = server.base;
      const call = (method: string, path: string, opts: Parameters<typeof callServer>[3] = {}) => callServer(base, method, path, opts);
      const token = (await call('POST', '/auth/register', { body: { name: 'n', email: `prod-${kind}@example.com`, password: 'password1' } })).body.token;
      const pid = (await call('POST', '/projects', { token, body: { name: 'p' } })).body.id;
      assert.equal((await call('POST', `/projects/${pid}/tables`, { token, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).status, 201);
      const key = (await call('POST', `/projects/${pid}/keys`, { token, body: { name: 'k', permissions: ['select', 'insert', 'function'] } })).body.key;
      assert.equal((await call('POST', `/${pid}/rest/notes`, { key, body: { body: 'hello' } })).status, 201);
      assert.deepEqual((await call('GET', `/${pid}/rest/notes?select=body`, { key })).body, [{ body: 'hello' }]);
      assert.equal((await call('PUT', `/projects/${pid}/functions/f`, { token, body: { code: 'export default () => ({ body: { ok: 1 } });' } })).status, 201);
      assert.deepEqual((await call('POST', `/${pid}/functions/f`, { key })).body, { ok: 1 });
      const metrics = await fetch(`${base}/metrics`);
      assert.match(await metrics.text(), /baseplate_function_invocation_duration_seconds_count\{outcome="ok"\} 1/);
      const preflight = await fetch(`${base}/${pid}/rest/notes`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } });
      assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    } finally {
      await server?.stop();
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
if (skipReason) test('production install [postgres]', { skip: skipReason }, () => undefined);
