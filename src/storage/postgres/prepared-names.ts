// The named prepared statements of one pooled PostgreSQL connection (postgres-db.ts explains why
// statements are prepared, and the limits). A statement beyond a limit runs unnamed: parsed and
// planned each time, in the same round trip. The limits bound the server's memory (a prepared
// statement holds 65 to 130 KiB of it, measured on a guarded read):
// - a connection names at most `perConnection`; once `replaceAfter` statements ran unnamed it is
//   replaced, so that what a connection holds follows the statements in use;
// - a project's own statements take at most `perProject` of them, so that a project sending ever
//   new query shapes cannot fill every connection's share, the others' included (256 x 130 KiB,
//   33 MiB a connection). A project beyond its share counts towards the replacement only when its
//   share holds statements of an earlier schema version of its own, which only a new connection
//   lets go: otherwise a project with more shapes in use than its share would close every
//   connection, everyone's statements with it, every few thousand requests, and gain nothing.

import type { Shape } from './prepared-run.ts';

export interface PreparedLimits {
  perConnection: number;
  perProject: number;
  replaceAfter: number;
}

export const PREPARED_LIMITS: PreparedLimits = { perConnection: 256, perProject: 64, replaceAfter: 4096 };

/** The project a statement reads (its schema), and the schema version it is named under (null: never changes). */
export interface StatementOwner {
  project: string;
  version: number | null;
}

interface Share {
  count: number;
  /** the oldest schema version among its named statements, and the newest seen */
  oldest: number | null;
  newest: number | null;
}

export class PreparedNames {
  private readonly names = new Set<string>();
  private readonly shares = new Map<string, Share>();
  /** the rows of each statement named here, as its first run described them (prepared-run.ts) */
  private readonly shapes = new Map<string, Shape>();
  private unnamed = 0;

  constructor(private readonly limits: PreparedLimits = PREPARED_LIMITS) {}

  /** The name to run a statement under, or undefined: unnamed. `owner` undefined: the platform's. */
  name(name: string, owner?: StatementOwner): string | undefined {
    if (this.names.has(name)) return name;
    // a project has a share while one of its statements is named here: at most perConnection shares
    const share = owner ? this.shares.get(owner.project) : undefined;
    const version = owner?.version ?? null;
    if (share && version !== null) share.newest = Math.max(share.newest ?? version, version);
    if (share && share.count >= this.limits.perProject) {
      if (share.oldest !== null && share.newest! > share.oldest) this.unnamed++;
      return undefined;
    }
    if (this.names.size >= this.limits.perConnection) {
      this.unnamed++;
      return undefined;
    }
    this.names.add(name);
    if (owner) this.count(owner.project, share ?? { count: 0, oldest: null, newest: version }, version);
    return name;
  }

  private count(project: string, share: Share, version: number | null): void {
    share.count++;
    if (version !== null) share.oldest = Math.min(share.oldest ?? version, version);
    this.shares.set(project, share);
  }

  /** Whether a statement is named here already. */
  holds(name: string): boolean {
    return this.names.has(name);
  }

  /** The rows of statement `name`, once a run here described them. */
  shapeOf(name: string): Shape | undefined {
    return this.shapes.get(name);
  }

  /** What a run of statement `name`, named here, described. */
  described(name: string, shape: Shape): void {
    if (this.names.has(name)) this.shapes.set(name, shape);
  }

  /** A statement named here that the server refused to parse: it holds nothing under that name. */
  forget(name: string, owner?: StatementOwner): void {
    this.shapes.delete(name);
    if (!this.names.delete(name) || !owner) return;
    const share = this.shares.get(owner.project)!;
    if (--share.count === 0) this.shares.delete(owner.project);
  }

  /** Enough statements ran unnamed that a new connection would serve better. */
  get replace(): boolean {
    return this.unnamed >= this.limits.replaceAfter;
  }
}
