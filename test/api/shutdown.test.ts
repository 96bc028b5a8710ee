// `npm start` ends cleanly on SIGTERM or SIGINT, whichever process receives it: npm (which
// forwards it), node itself, or the whole process group (Ctrl-C in a terminal reaches both). The
// request in flight (a function invocation of about a second) gets its normal answer, an email
// already promised reaches its provider, new connections are refused, and npm, node and the
// sandbox processes are all gone within a bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, ROOT } from '../../src/bundles.ts';
import { createTestDatabase, testEngines, type EngineName } from '../support/postgres.ts';
import { callServer, startServer } from '../support/server-process.ts';

const { engines, skipReason } = await testEngines();
const BOUND_MS = 15000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const childrenOf = (pid: number): number[] =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
};

/** An email API that answers each message after `delayMs`, remembering the messages it answered. */
async function slowEmailApi(delayMs: number): Promise<{ server: Server; url: string; answered: string[] }> {
  const answered: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () =>
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"1"}', () => answered.push(JSON.parse(body).to[0]));
      }, delayMs),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, answered };
}

interface NpmStart {
  npm: ChildProcess;
  node: number;
  base: string;
  output(): string;
  exit: Promise<number | null>;
}

/** `npm start` in its own process group, as a terminal would run it; resolves once it listens. */
async function npmStart(env: Record<string, string>): Promise<NpmStart> {
  buildDist();
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1', MASTER_KEY: randomBytes(32).toString('hex'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exit = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
  const deadline = Date.now() + 60000;
  let m: RegExpExecArray | null = null;
  while (!(m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out))) {
    if (npm.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not listen: ${out}`);
    await sleep(20);
  }
  const node = childrenOf(npm.pid!).find((c) => cmdline(c).includes('dist/main.js'));
  assert.ok(node, `node is not npm's child: ${childrenOf(npm.pid!).map(cmdline).join('; ')}`);
  return { npm, node, base: m[1]!, output: () => out, exit };
}

/** A project with a function that computes for about `seconds`, and an email provider that answers slowly. */
async function prepare(base: string, seconds = 1) {
  const owner = (await callServer(base, 'POST', '/auth/register', { body: { name: 'n', email: `stop-${randomBytes(4).toString('hex')}@example.com`, password: 'password1' } })).body.token;
  const pid = (await callServer(base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
  const code = `export default () => { const end = Date.now() + ${seconds * 1000}; while (Date.now() < end) {} return { body: { done: true } }; };`;
  assert.equal((await callServer(base, 'PUT', `/projects/${pid}/functions/slow`, { token: owner, body: { code } })).status, 201);
  const key = (await callServer(base, 'POST', `/projects/${pid}/keys`, { token: owner, body: { name: 'k', permissions: ['function'] } })).body.key;
  const email = { provider: 'emailapi', from_address: 'app@example.com', from_name: 'App', emailapi_api_key: 'key-123456' };
  assert.equal((await callServer(base, 'PUT', `/projects/${pid}/auth/email-config`, { token: owner, body: email })).status, 200);
  const user = `user-${randomBytes(4).toString('hex')}@example.com`;
  assert.equal((await callServer(base, 'POST', `/${pid}/auth/register`, { body: { email: user, password: 'password1' } })).status, 201);
  return { pid, key, user };
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function gone(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + BOUND_MS;
  let alive = pids;
  while ((alive = pids.filter((p) => existsSync(`/proc/${p}`))).length > 0 && Date.now() < deadline) await sleep(50);
  return alive;
}

type Target = 'npm' | 'node' | 'group';
const CASES: Array<[string, Target, NodeJS.Signals]> = [
  ['SIGTERM to the npm process', 'npm', 'SIGTERM'],
  ['SIGINT to the npm process', 'npm', 'SIGINT'],
  ['SIGTERM to the node process', 'node', 'SIGTERM'],
  ['SIGINT to the process group (Ctrl-C: npm and node both receive it)', 'group', 'SIGINT'],
];

async function scenario(kind: EngineName, target: Target, signal: NodeJS.Signals): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bp-stop-'));
  const db = kind === 'postgres' ? await createTestDatabase() : null;
  const api = await slowEmailApi(800);
  const s = await npmStart({ EMAILAPI_BASE_URL: api.url, ...(db ? { DATABASE_URL: db.url } : { DATA_DIR: join(dir, 'data') }) });
  try {
    const { pid, key, user } = await prepare(s.base);
    const invocation = fetch(`${s.base}/${pid}/functions/slow`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    // an email promised (the answer comes before the delivery), then the invocation well under way
    assert.equal((await callServer(s.base, 'POST', `/${pid}/auth/magic-link`, { body: { email: user } })).status, 200);
    await sleep(300);
    const sandboxes = childrenOf(s.node).filter((c) => cmdline(c).includes('function-worker'));
    assert.ok(sandboxes.length >= 1, 'a sandbox process runs the invocation');
    process.kill(target === 'npm' ? s.npm.pid! : target === 'node' ? s.node : -s.npm.pid!, signal);

    await sleep(200);
    assert.equal(await connects(Number(new URL(s.base).port)), false, 'a new connection was accepted after the signal');
    const res = await invocation;
    assert.deepEqual([res.status, await res.json()], [200, { done: true }]);
    const code = await Promise.race([s.exit, sleep(BOUND_MS).then(() => 'still running')]);
    assert.equal(code, 0, s.output());
    assert.deepEqual(await gone([s.npm.pid!, s.node, ...sandboxes]), [], s.output());
    assert.deepEqual(api.answered, [user], 'the promised email reached its provider before the exit');
    const lines = s.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    assert.ok(lines.some((l) => l.msg.startsWith('shutting down') && l.signal === signal), s.output());
    assert.equal(lines.at(-1).msg, 'stopped');
  } finally {
    try {
      process.kill(-s.npm.pid!, 'SIGKILL');
    } catch {
      // ended, as it should have
    }
    api.server.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const kind of engines)
  for (const [what, target, signal] of CASES)
    test(`[${kind}] npm start, ${what}: the request in flight answered, the email delivered, new connections refused, every process gone`, () => scenario(kind, target, signal));
for (const kind of engines)
  test(`[${kind}] a shutdown longer than SHUTDOWN_TIMEOUT_MS ends the process with 1 and says so`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bp-stop-'));
    const db = kind === 'postgres' ? await createTestDatabase() : null;
    const server = await startServer({ SHUTDOWN_TIMEOUT_MS: '500', ...(db ? { DATABASE_URL: db.url } : { DATA_DIR: join(dir, 'data') }) });
    try {
      const { pid, key } = await prepare(server.base, 3);
      const invocation = fetch(`${server.base}/${pid}/functions/slow`, { method: 'POST', headers: { authorization: `Bearer ${key}` } }).catch(() => null);
      await sleep(300);
      const exited = new Promise<number | null>((r) => server.proc.once('exit', (code) => r(code)));
      const t0 = Date.now();
      server.proc.kill('SIGTERM');
      assert.equal(await exited, 1);
      assert.ok(Date.now() - t0 < 2500, `exited after ${Date.now() - t0} ms`);
      assert.match(server.output(), /"level":"error".*shutdown took longer than SHUTDOWN_TIMEOUT_MS \(500 ms\)/);
      await invocation;
    } finally {
      await server.stop();
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
if (skipReason) test('shutdown [postgres]', { skip: skipReason }, () => undefined);
