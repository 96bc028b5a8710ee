// What the data plane remembers of credentials it resolved (data-plane.ts CallerGuess): a bounded
// map from (project, credentials) to what they resolved to, least recently resolved first. One
// project may hold only a share of it, so that a project cycling through many keys or end-user
// tokens evicts its own entries, not everyone else's (theirs would then only take the long way: a
// second round trip, never a wrong answer).

export class CallerMemory<T> {
  /** projects in order of their latest entry; within each, entries in order of resolution */
  private readonly projects = new Map<string, Map<string, T>>();
  private size = 0;

  constructor(
    private readonly capacity: number,
    private readonly perProject: number,
  ) {}

  get(projectId: string, credentials: string): T | undefined {
    return this.projects.get(projectId)?.get(credentials);
  }

  set(projectId: string, credentials: string, value: T): void {
    let entries = this.projects.get(projectId);
    if (entries) this.projects.delete(projectId); // to the back
    else entries = new Map();
    this.projects.set(projectId, entries);
    if (entries.delete(credentials)) this.size--;
    entries.set(credentials, value);
    this.size++;
    if (entries.size > this.perProject) this.evictFrom(projectId, entries);
    while (this.size > this.capacity) {
      const [oldest, theirs] = this.projects.entries().next().value!;
      this.evictFrom(oldest, theirs);
    }
  }

  /** Entries held (tests). */
  get count(): number {
    return this.size;
  }

  private evictFrom(projectId: string, entries: Map<string, T>): void {
    entries.delete(entries.keys().next().value!);
    this.size--;
    if (entries.size === 0) this.projects.delete(projectId);
  }
}
