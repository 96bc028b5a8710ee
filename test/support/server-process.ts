// The real service in a child process, as npm start runs it (node dist/main.js, built first when
// stale), or the baseplate command (bin/baseplate.mjs), for tests where a crash, an exit code or the
// output must be observable.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { buildDist, ROOT } from '../../src/bundles.ts';

const BASE_ENV = { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1', MASTER_KEY: randomBytes(32).toString('hex') };

/** The baseplate command: `[CLI, 'serve']` as the argv of startServer or runUntilExit runs it. */
export const CLI = join(ROOT, 'bin', 'baseplate.mjs');

/** `cwd`: the directory the service runs in (another copy of it, e.g. a production install, with `argv` naming its dist/main.js) */
function spawnMain(env: Record<string, string>, argv = [join(ROOT, 'dist', 'main.js')], cwd = ROOT): ChildProcess {
  buildDist();
  return spawn(process.execPath, argv, {
    cwd,
    env: { ...process.env, ...BASE_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface ServerProcess {
  proc: ChildProcess;
  base: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
}

/** Starts the service and resolves once it listens (rejects if it exits or takes longer than timeoutMs). */
export async function startServer(env: Record<string, string>, timeoutMs = 30000, argv?: string[], cwd?: string): Promise<ServerProcess> {
  const proc = spawnMain(env, argv, cwd);
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start within ${timeoutMs} ms: ${out}`)), timeoutMs);
    const onData = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout!.off('data', onData);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited with ${code}: ${out}`));
    });
  });
  return {
    proc,
    base,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs the service until it exits by itself; kills it (and says so) after timeoutMs. */
export async function runUntilExit(
  env: Record<string, string>,
  timeoutMs: number,
  argv?: string[],
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number; killed: boolean }> {
  const started = Date.now();
  const proc = spawnMain(env, argv);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    proc.kill('SIGKILL');
  }, timeoutMs);
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, ms: Date.now() - started, killed };
}

/** One JSON request to a server process: `token` (or `key`) as the bearer, `user` as X-User-Token. */
export async function callServer(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; key?: string; user?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token ?? opts.key) headers.authorization = `Bearer ${opts.token ?? opts.key}`;
  if (opts.user) headers['x-user-token'] = opts.user;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
