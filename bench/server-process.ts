// The service (or a peer) as a separate server process, started the way production starts it, so
// that start-up time and resident memory are the server's own and not the load generator's.
// Every child is its own process group: stopping it (or this process dying) takes its children too.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

/** How the service is started: the compiled build when there is one, as `npm start` runs it (its node arguments). */
export function serviceCommand(): { argv: string[]; label: string } {
  if (existsSync(join(REPO, 'dist/main.js'))) {
    const start = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).scripts.start as string;
    const argv = start.replace(/^exec node /, '').split(' ');
    return { argv, label: `node ${argv.join(' ')}` };
  }
  return { argv: ['--no-node-snapshot', '--import', 'tsx', 'src/main.ts'], label: 'node --no-node-snapshot --import tsx src/main.ts (no dist/main.js)' };
}

/** A port nothing listens on right now (the child binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const live = new Set<ChildProcess>();
function killAllNow() {
  for (const p of live) {
    try {
      process.kill(-p.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
const cleanups = new Set<() => Promise<void>>();
/**
 * Registers a clean-up (a throw-away database, roles) that Ctrl-C must not skip; returns the
 * function that runs it once and unregisters it, for the ordinary path.
 */
export function cleanupOnInterrupt(fn: () => Promise<void>): () => Promise<void> {
  guardExit();
  let done: Promise<void> | null = null;
  const once = () => (done ??= fn());
  cleanups.add(once);
  return async () => {
    cleanups.delete(once);
    await once();
  };
}

let guarded = false;
/** Whatever way the bench ends (an error, Ctrl-C), no server it started stays behind. */
function guardExit() {
  if (guarded) return;
  guarded = true;
  process.once('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, async () => {
      console.error(`${sig}: stopping the servers and dropping what the bench created`);
      killAllNow();
      const timeout = new Promise((r) => setTimeout(r, 10000).unref());
      await Promise.race([Promise.allSettled([...cleanups].map((fn) => fn())), timeout]);
      process.exit(130);
    });
}

export interface ServerProcess {
  pid: number;
  /** spawn to the first answer `ready` accepted, in ms */
  startupMs: number;
  logFile: string;
  /** The last characters of the server's output, for error messages. */
  logTail(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  logFile: string;
  /** Polled until it resolves true: the server is ready. */
  ready: () => Promise<boolean>;
  timeoutMs?: number;
}

/** Spawns a server, output to logFile, and resolves once `ready` says so. */
export async function startProcess(opts: StartOptions): Promise<ServerProcess> {
  guardExit();
  const out = openSync(opts.logFile, 'a');
  const t0 = performance.now();
  const proc = spawn(opts.command, opts.args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', out, out], detached: true });
  closeSync(out);
  live.add(proc);
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  exited.then(() => live.delete(proc));
  const logTail = () => {
    try {
      return readFileSync(opts.logFile, 'utf8').slice(-600);
    } catch {
      return '';
    }
  };
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    signalGroup(proc.pid!, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(proc.pid!, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    signalGroup(proc.pid!, 'SIGKILL'); // children the server left behind
  };
  const deadline = t0 + (opts.timeoutMs ?? 60000);
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${opts.command} exited (${proc.exitCode ?? proc.signalCode}) before it was ready: ${logTail()}`);
    if (await opts.ready().catch(() => false)) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`${opts.command} not ready within ${opts.timeoutMs ?? 60000} ms: ${logTail()}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return { pid: proc.pid!, startupMs: performance.now() - t0, logFile: opts.logFile, logTail, stop };
}

function signalGroup(pid: number, sig: NodeJS.Signals) {
  try {
    process.kill(-pid, sig);
  } catch {
    // the group is gone
  }
}

/** GET url answers 200 (the body is read and dropped). */
export async function answers200(url: string, headers: Record<string, string> = {}): Promise<boolean> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(2000) });
  await res.arrayBuffer();
  return res.status === 200;
}

/** The process and its descendants (sandbox processes, a peer's helpers). */
function tree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${out[i]}/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) out.push(Number(c));
      } catch {
        // the thread ended
      }
    }
  }
  return out;
}

/** A /proc/<pid>/status field (VmRSS: resident now; VmHWM: the peak) summed over the tree, in MiB. */
export function treeMemoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  let kb = 0;
  for (const p of tree(pid)) {
    try {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // the process ended
    }
  }
  return kb / 1024;
}

/**
 * Resets VmHWM to the current RSS over the tree (writing 5 to clear_refs, Linux 4.0+), so that the
 * next peak is the load's, not the set-up's. False when the kernel refuses.
 */
export function resetPeak(pid: number): boolean {
  try {
    for (const p of tree(pid)) writeFileSync(`/proc/${p}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Samples VmRSS every 50 ms until stopped; the peak is the larger of the samples and VmHWM (when
 * resetPeak worked, VmHWM catches spikes between samples).
 */
export function peakSampler(pid: number, hwmValid: boolean): { stop(): number } {
  let peak = treeMemoryMiB(pid, 'VmRSS');
  const timer = setInterval(() => (peak = Math.max(peak, treeMemoryMiB(pid, 'VmRSS'))), 50);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, treeMemoryMiB(pid, 'VmRSS'), hwmValid ? treeMemoryMiB(pid, 'VmHWM') : 0);
    },
  };
}

export interface ServiceProcess extends ServerProcess {
  base: string;
}

/**
 * Starts Baseplate with the environment a deployment gives it: only the settings in `env` (store,
 * MASTER_KEY, ...) on top of PATH and HOME, production defaults for everything else. Ready means
 * the first 200 from GET /health. `port`: a free one when not given.
 */
export async function startService(env: Record<string, string>, logFile: string, port?: number): Promise<ServiceProcess> {
  port ??= await freePort();
  const base = `http://127.0.0.1:${port}`;
  const inherited = Object.fromEntries(['PATH', 'HOME', 'TMPDIR'].filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
  const p = await startProcess({
    command: process.execPath,
    args: serviceCommand().argv,
    cwd: REPO,
    env: { ...inherited, PORT: String(port), HOST: '127.0.0.1', ...env },
    logFile,
    ready: () => answers200(`${base}/health`),
  });
  return { ...p, base };
}
