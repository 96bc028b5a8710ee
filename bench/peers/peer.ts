// What every peer of `--peers` is to the process bench, and how its binary gets onto the machine:
// from the npm registry, into a cache directory outside the repository.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerProcess } from '../server-process.ts';
import type { Endpoint } from '../workload.ts';

export interface Peer {
  name: string;
  server: ServerProcess;
  read: Endpoint;
  insert: Endpoint;
}

/** A peer with its data loaded; the server is started by start(), beside Baseplate's measured one. */
export interface PreparedPeer {
  start(logFile: string): Promise<Peer>;
  /** Stops the server (if started) and removes what prepare made (database, roles, data directory). */
  drop(): Promise<void>;
}

/** BENCH_PEERS_DIR, else tmpdir()/baseplate-bench-peers. */
export function peersDir(): string {
  return process.env.BENCH_PEERS_DIR ?? join(tmpdir(), 'baseplate-bench-peers');
}

/**
 * `npm install pkg@version` into `prefix` unless `installed()` already holds (install, not ci: the
 * platform packages are optional); throws when it still does not hold after the install.
 */
export function npmInstallOnce(prefix: string, pkg: string, version: string, installed: () => boolean): void {
  if (installed()) return;
  mkdirSync(prefix, { recursive: true });
  console.error(`installing ${pkg}@${version} into ${prefix}`);
  execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `${pkg}@${version}`], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (!installed()) throw new Error(`${pkg}@${version} installed nothing usable in ${prefix} (platform ${process.platform}-${process.arch})`);
}
