// Projects (SPEC 4.2, CONTRACT §2). Another owner's project is indistinguishable from a missing one.
import { creationTime } from './creation-time.ts';
import type { Db, Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId, isId } from '../lib/ids.ts';
import { AppError } from '../errors.ts';
import { charLength } from '../lib/validate.ts';

export interface Project {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

function checkName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1) throw new AppError('validation_failed.empty', { field: 'name', what: 'project name' });
  if (charLength(name) > 100) throw new AppError('validation_failed.too_long', { field: 'name', what: 'project name', max: 100 });
  return name;
}

function checkDescription(raw: string | null): string | null {
  if (raw === null) return null;
  if (charLength(raw) > 1000) throw new AppError('validation_failed.too_long', { field: 'description', what: 'description', max: 1000 });
  return raw;
}

const COLUMNS = 'id, name, description, created_at, updated_at';
/** The key of the look-ups of projects that unauthenticated requests name (Engine.platformFor). */
export const CLAIMED_PROJECTS = ' claimed projects';
/** Projects a public route found, remembered (their look-up is once per process, not per request). */
const KNOWN_PROJECTS = 10000;

export class ProjectService {
  private readonly db: Db;
  /** projects a public route found, oldest first */
  private readonly known = new Map<string, true>();
  /** look-ups under way, by project */
  private readonly lookingUp = new Map<string, Promise<boolean>>();

  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
  ) {
    this.db = engine.platform;
  }

  list(ownerId: string): Promise<Project[]> {
    return this.db.all<Project>(`SELECT ${COLUMNS} FROM ${this.db.t('projects')} WHERE owner_id = ? ORDER BY created_at, id`, [ownerId]);
  }

  /** The project if it exists and belongs to the owner; 404 otherwise. */
  async get(ownerId: string, projectId: string): Promise<Project> {
    if (!isId(projectId)) throw new AppError('not_found', { what: 'project' });
    const row = await this.db.get<Project>(`SELECT ${COLUMNS} FROM ${this.db.t('projects')} WHERE id = ? AND owner_id = ?`, [
      projectId,
      ownerId,
    ]);
    if (!row) throw new AppError('not_found', { what: 'project' });
    return row;
  }

  /** The project by id alone (data-plane routes authenticate with a project credential). */
  async find(projectId: string): Promise<Project | undefined> {
    if (!isId(projectId)) return undefined;
    return this.db.get<Project>(`SELECT ${COLUMNS} FROM ${this.db.t('projects')} WHERE id = ?`, [projectId]);
  }

  async create(ownerId: string, input: { name: string; description?: string | null }): Promise<Project> {
    const name = checkName(input.name);
    const description = checkDescription(input.description ?? null);
    const latest = `SELECT MAX(created_at) AS latest FROM ${this.db.t('projects')} WHERE owner_id = ?`;
    const now = (await creationTime(this.db, this.clock.now(), latest, [ownerId])).toISOString();
    const project: Project = { id: newId(), name, description, created_at: now, updated_at: now };
    await this.engine.createProjectStore(project.id);
    try {
      await this.db.run(`INSERT INTO ${this.db.t('projects')} (id, owner_id, name, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`, [
        project.id,
        ownerId,
        name,
        description,
        now,
        now,
      ]);
    } catch (err) {
      await this.engine.dropProjectStore(project.id).catch(() => undefined);
      throw err;
    }
    return project;
  }

  async update(ownerId: string, projectId: string, input: { name?: string; description?: string | null }): Promise<Project> {
    await this.get(ownerId, projectId);
    const sets: string[] = ['updated_at = ?'];
    const params: (string | null)[] = [this.clock.now().toISOString()];
    if (input.name !== undefined) (sets.push('name = ?'), params.push(checkName(input.name)));
    if (input.description !== undefined) (sets.push('description = ?'), params.push(checkDescription(input.description)));
    await this.db.run(`UPDATE ${this.db.t('projects')} SET ${sets.join(', ')} WHERE id = ? AND owner_id = ?`, [...params, projectId, ownerId]);
    return this.get(ownerId, projectId);
  }

  /**
   * The store first: a drop that fails (a time-out behind a lock) leaves the project to delete
   * again, never a store that nodes which remember the project (exists()) would go on serving.
   */
  async remove(ownerId: string, projectId: string): Promise<void> {
    await this.get(ownerId, projectId);
    await this.engine.dropProjectStore(projectId);
    this.forget(projectId);
    await this.db.run(`DELETE FROM ${this.db.t('projects')} WHERE id = ? AND owner_id = ?`, [projectId, ownerId]);
  }

  /**
   * Whether the project an unauthenticated request names exists. One found before is taken to
   * exist: a store deleted since (on any node) fails its first statement with StoreMissing, a 404,
   * and the caller forgets it. Another is looked up under one share for all such look-ups
   * (Engine.platformFor): a flood of made-up ids waits on that share, or is refused 503
   * project_busy, instead of taking the platform's connections from every project.
   */
  async exists(projectId: string): Promise<boolean> {
    if (this.known.has(projectId)) return true;
    if (!isId(projectId)) return false;
    // the first requests of a project, arriving together, share one look-up
    let found = this.lookingUp.get(projectId);
    if (!found) {
      found = this.lookUp(projectId).finally(() => this.lookingUp.delete(projectId));
      this.lookingUp.set(projectId, found);
    }
    return found;
  }

  private async lookUp(projectId: string): Promise<boolean> {
    const db = this.engine.platformFor(CLAIMED_PROJECTS);
    if (!(await db.get(`SELECT 1 AS one FROM ${db.t('projects')} WHERE id = ?`, [projectId]))) return false;
    this.known.set(projectId, true);
    if (this.known.size > KNOWN_PROJECTS) this.known.delete(this.known.keys().next().value!);
    return true;
  }

  /** Drops a project exists() found (its store turned out to be gone). */
  forget(projectId: string): void {
    this.known.delete(projectId);
  }
}
