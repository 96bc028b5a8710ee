// The performance goals of issue [E], checked against what one run measured. Printed, never
// asserted: figures from a shared machine are for comparing within a run, not for failing a build.
import type { LoadResult } from './load.ts';

export interface EngineFigures {
  /** the workload's reads and single-row inserts against the server process */
  reads?: LoadResult;
  inserts?: LoadResult;
  oneProject?: LoadResult;
  randomProjects?: LoadResult;
  projects?: number;
  idleRssMiB?: number;
  peakReadRssMiB?: number;
  startupMs?: number;
}

export interface Figures {
  sqlite?: EngineFigures;
  postgres?: EngineFigures;
  /** PostgREST under the same load as `postgres` (only with --peers) */
  postgrest?: PeerLoads;
  /** PocketBase under the same load as `sqlite` (only with --peers) */
  pocketbase?: PeerLoads;
}

export interface PeerLoads {
  reads?: LoadResult;
  inserts?: LoadResult;
}

export interface Goal {
  goal: string;
  measured: string;
  /** null: not measured in this run */
  met: boolean | null;
}

const x = (v: number) => `${v.toFixed(2)}x`;
const unmeasured = (goal: string, why: string): Goal => ({ goal, measured: why, met: null });

/** A goal measured on loads with failed answers is not met, whatever the figure says. */
function checked(g: Goal, ...loads: LoadResult[]): Goal {
  const failed = loads.reduce((n, l) => n + l.errors, 0);
  return failed ? { ...g, measured: `${g.measured}; ${failed} failed answers`, met: false } : g;
}

export function evaluateGoals(f: Figures): Goal[] {
  const out: Goal[] = [];
  const pgr = f.postgres;
  const peer = f.postgrest;
  const noPeer = unmeasuredPeer(pgr, peer, 'PostgreSQL');
  if (pgr?.reads && peer?.reads) {
    const r = pgr.reads.rps / peer.reads.rps;
    const loads = [pgr.reads, peer.reads];
    out.push(checked({ goal: 'PostgreSQL engine reads >= 1.5x PostgREST req/s', measured: `${x(r)} (${pgr.reads.rps.toFixed(0)} vs ${peer.reads.rps.toFixed(0)} req/s)`, met: r >= 1.5 }, ...loads));
    out.push(checked({ goal: 'PostgreSQL engine reads p99 <= PostgREST p99', measured: `${pgr.reads.p99.toFixed(1)} vs ${peer.reads.p99.toFixed(1)} ms (${x(pgr.reads.p99 / peer.reads.p99)})`, met: pgr.reads.p99 <= peer.reads.p99 }, ...loads));
  } else {
    out.push(unmeasured('PostgreSQL engine reads >= 1.5x PostgREST req/s', noPeer), unmeasured('PostgreSQL engine reads p99 <= PostgREST p99', noPeer));
  }
  if (pgr?.inserts && peer?.inserts) {
    const r = pgr.inserts.rps / peer.inserts.rps;
    out.push(checked({ goal: 'PostgreSQL engine single-row inserts >= 1x PostgREST req/s', measured: `${x(r)} (${pgr.inserts.rps.toFixed(0)} vs ${peer.inserts.rps.toFixed(0)} req/s)`, met: r >= 1 }, pgr.inserts, peer.inserts));
  } else out.push(unmeasured('PostgreSQL engine single-row inserts >= 1x PostgREST req/s', noPeer));
  out.push(...embeddedGoals(f));
  for (const [name, e] of [['SQLite', f.sqlite], ['PostgreSQL', f.postgres]] as const) if (e) out.push(...engineGoals(name, e));
  return out;
}

/** Why a comparison with a peer is missing: its engine was not benchmarked, no --peers, or no figure. */
function unmeasuredPeer(engine: EngineFigures | undefined, peer: PeerLoads | undefined, engineName: string): string {
  if (!engine) return `not measured (no ${engineName} engine in this run)`;
  return peer ? 'not measured' : 'not measured (run with --peers)';
}

function embeddedGoals(f: Figures): Goal[] {
  const sq = f.sqlite;
  const pb = f.pocketbase;
  const goal = 'embedded engine reads >= 2x PocketBase req/s';
  const out: Goal[] = [];
  if (sq?.reads && pb?.reads) {
    const r = sq.reads.rps / pb.reads.rps;
    out.push(checked({ goal, measured: `${x(r)} (${sq.reads.rps.toFixed(0)} vs ${pb.reads.rps.toFixed(0)} req/s)`, met: r >= 2 }, sq.reads, pb.reads));
  } else {
    const pgr = f.postgrest?.reads;
    out.push(unmeasured(goal, `${unmeasuredPeer(sq, pb, 'embedded')}${!pb && sq?.reads && pgr ? `; SQLite reads / PostgREST's (minutes apart): ${x(sq.reads.rps / pgr.rps)}` : ''}`));
  }
  // Information, judged by no one (met: null): the issue's insert goal for the embedded engine is
  // "no worse than today", a comparison with Baseplate's own earlier figures, not with PocketBase.
  if (sq?.inserts && pb?.inserts)
    out.push({ goal: 'embedded engine single-row inserts vs PocketBase', measured: `${x(sq.inserts.rps / pb.inserts.rps)} (${sq.inserts.rps.toFixed(0)} vs ${pb.inserts.rps.toFixed(0)} req/s; information, no goal)`, met: null });
  return out;
}

function engineGoals(name: string, e: EngineFigures): Goal[] {
  const out: Goal[] = [];
  if (e.oneProject && e.randomProjects) {
    const r = e.randomProjects.p50 / e.oneProject.p50;
    const goal = `${name}: ${e.projects ?? '?'} projects read at random, p50 <= 1.25x one project's`;
    out.push(checked({ goal, measured: `${x(r)} (${e.randomProjects.p50.toFixed(2)} vs ${e.oneProject.p50.toFixed(2)} ms)`, met: r <= 1.25 }, e.oneProject, e.randomProjects));
  }
  if (e.idleRssMiB !== undefined) out.push({ goal: `${name}: idle RSS <= 80 MiB`, measured: `${e.idleRssMiB.toFixed(1)} MiB`, met: e.idleRssMiB <= 80 });
  if (e.peakReadRssMiB !== undefined) out.push({ goal: `${name}: peak RSS under read load <= 200 MiB`, measured: `${e.peakReadRssMiB.toFixed(1)} MiB`, met: e.peakReadRssMiB <= 200 });
  if (e.startupMs !== undefined) out.push({ goal: `${name}: start-up to the first /health 200 < 1 s`, measured: `${(e.startupMs / 1000).toFixed(2)} s`, met: e.startupMs < 1000 });
  return out;
}

export function formatGoals(goals: readonly Goal[]): string[] {
  const w = Math.max(...goals.map((g) => g.goal.length));
  const mark = (m: boolean | null) => (m === null ? '-' : m ? 'met' : 'MISSED').padEnd(6);
  return goals.map((g) => `  ${mark(g.met)}  ${g.goal.padEnd(w)}  ${g.measured}`);
}
