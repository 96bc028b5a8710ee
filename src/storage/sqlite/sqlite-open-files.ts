// The project files a thread keeps open, in two least-recently-used tiers. Reopening a file costs
// about as much CPU as the request that needs it (the connection, its WAL index, the schema parsed
// again, its statements prepared again), so under a spread load files stay open as long as memory
// allows; but most of what an open connection holds is its page cache and its mapping of the WAL
// index, which it needs only while in use and gets back for a few microseconds. So the `warm` most
// recently used keep theirs; a file that falls behind them is `release`d (open, statements kept,
// those two given back: about 80 KiB less each); beyond `limit` in all, the least recently used is
// closed. A `pinned` file (inside a transaction, or waiting for the write lock) is never closed,
// nor released.
export interface OpenFilesOptions<C> {
  limit: number;
  warm: number;
  release(conn: C): void;
  close(conn: C, id: string): void;
  pinned(conn: C): boolean;
  /**
   * Runs a release later (setImmediate): after the statements of the request that displaced the
   * file, which allocate the page cache their own file needs first. Released before them, the
   * freed cache is often at the top of the heap, which the C allocator then gives back to the
   * system, and the next allocation faults its pages in again (measured: most of the cost of a
   * release). It also keeps the release off that request's path.
   */
  later(fn: () => void): void;
}

export class OpenFiles<C> {
  /** most recently used last, in each tier */
  private readonly warm = new Map<string, C>();
  private readonly cold = new Map<string, C>();

  constructor(private readonly opts: OpenFilesOptions<C>) {
    if (opts.warm < 1) throw new Error('internal: at least one warm file'); // the one in use
  }

  /** The open file of `id`, now the most recently used. */
  use(id: string): C | undefined {
    const warm = this.warm.get(id);
    if (warm !== undefined) {
      this.warm.delete(id);
      this.warm.set(id, warm);
      return warm;
    }
    const cold = this.cold.get(id);
    if (cold !== undefined) {
      this.cold.delete(id);
      this.warmUp(id, cold);
    }
    return cold;
  }

  /** A file just opened, the most recently used; the least recently used beyond the limit are closed. */
  add(id: string, conn: C): void {
    this.warmUp(id, conn);
    this.trim(id);
  }

  /**
   * Closes the least recently used files beyond the limit but `keep`'s. A pinned file is skipped,
   * and the count may stay above the limit until it is unpinned (then its owner calls this again).
   */
  trim(keep: string): void {
    if (this.size <= this.opts.limit) return;
    for (const tier of [this.cold, this.warm]) {
      for (const [other, c] of tier) {
        if (this.size <= this.opts.limit) return;
        if (other === keep || this.opts.pinned(c)) continue;
        tier.delete(other);
        this.opts.close(c, other);
      }
    }
  }

  /** The open file of `id`, its place unchanged. */
  peek(id: string): C | undefined {
    return this.warm.get(id) ?? this.cold.get(id);
  }

  /** Forgets the file of `id` (the caller closes it). */
  take(id: string): C | undefined {
    const conn = this.peek(id);
    this.warm.delete(id);
    this.cold.delete(id);
    return conn;
  }

  /** Forgets every file (the caller closes them). */
  takeAll(): C[] {
    const all = [...this.cold.values(), ...this.warm.values()];
    this.warm.clear();
    this.cold.clear();
    return all;
  }

  get size(): number {
    return this.warm.size + this.cold.size;
  }

  /** Files keeping their page cache (tests). */
  get warmCount(): number {
    return this.warm.size;
  }

  private warmUp(id: string, conn: C): void {
    this.warm.set(id, conn);
    if (this.warm.size <= this.opts.warm) return;
    const [oldest, c] = this.warm.entries().next().value!;
    this.warm.delete(oldest);
    this.cold.set(oldest, c);
    // still behind, still open and outside a transaction when its turn comes
    this.opts.later(() => {
      if (this.cold.get(oldest) === c && !this.opts.pinned(c)) this.opts.release(c);
    });
  }
}
