// A project's tables and enabled policies as the data plane uses them, cached per process under the
// project's schema version. Every change to tables or policies bumps the version in its own
// transaction (bumpSchemaVersion), and every request reads the version afresh together with its
// credentials (data-plane.ts), so a node never applies a definition older than the last change
// acknowledged anywhere: the cache is exact, not eventually right.
import type { Db, Engine } from '../storage/engine.ts';
import type { TableInfo } from './tables.ts';
import type { StoredPolicy } from './policies.ts';

export interface ProjectSchema {
  version: number;
  tables: ReadonlyMap<string, TableInfo>;
  /** enabled policies by table id */
  policies: ReadonlyMap<string, readonly StoredPolicy[]>;
}

/** Called inside the transaction of every change to a project's tables or policies. */
export async function bumpSchemaVersion(tx: Db): Promise<void> {
  await tx.run(`UPDATE ${tx.t('_bp_meta')} SET version = version + 1 WHERE id = 1`);
}

export async function schemaVersion(db: Db): Promise<number> {
  const row = await db.get<{ version: number | string }>(`SELECT version FROM ${db.t('_bp_meta')} WHERE id = 1`);
  return Number(row!.version);
}

export interface SchemaSources {
  tableInfos(db: Db): Promise<TableInfo[]>;
  enabledByTable(db: Db): Promise<Map<string, StoredPolicy[]>>;
}

// Projects whose definitions a process keeps (a few KiB each): a miss costs four statements, so the
// bound is above the thousand active projects the bench reads at random.
const CACHED_PROJECTS = 2000;

export class ProjectSchemaCache {
  /** least recently used first */
  private readonly entries = new Map<string, ProjectSchema>();

  constructor(
    private readonly engine: Engine,
    private readonly sources: SchemaSources,
  ) {}

  /**
   * Whether the project's schema has changed since `version` (asked after a failed statement of a
   * request: under the project's share of the engine, as the request's own statements are).
   */
  async changedSince(projectId: string, version: number): Promise<boolean> {
    return (await schemaVersion(await this.engine.callers(projectId))) !== version;
  }

  /** The schema at `version` (read by the caller with its credentials), or at the current one. */
  async get(projectId: string, version?: number): Promise<ProjectSchema> {
    const db = await this.engine.project(projectId);
    const wanted = version ?? (await schemaVersion(db));
    const hit = this.entries.get(projectId);
    if (hit?.version === wanted) {
      this.entries.delete(projectId);
      this.entries.set(projectId, hit);
      return hit;
    }
    const schema = await this.load(db);
    this.entries.delete(projectId);
    this.entries.set(projectId, schema);
    if (this.entries.size > CACHED_PROJECTS) this.entries.delete(this.entries.keys().next().value!);
    return schema;
  }

  /**
   * Tables and policies are two statements, each its own snapshot on PostgreSQL: the version read
   * before and after them is the same only if no change committed in between, and then it is
   * the version they belong to.
   */
  private async load(db: Db): Promise<ProjectSchema> {
    for (;;) {
      const before = await schemaVersion(db);
      const [infos, policies] = await Promise.all([this.sources.tableInfos(db), this.sources.enabledByTable(db)]);
      if ((await schemaVersion(db)) === before) return { version: before, tables: new Map(infos.map((t) => [t.name, t])), policies };
    }
  }
}
