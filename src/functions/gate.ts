// Function slots, shared fairly between projects (ARCHITECTURE principle 13). At most `size` jobs
// run at once and at most `perKey` of one key (a project), so a project flooding the service with
// hanging invocations holds its share and no more: a running invocation cannot be preempted, so a
// share borrowed while the others were quiet could not be handed back when they need it. A job over
// either limit waits; a freed slot goes to the waiting key with the fewest running jobs (ties: the
// key served longest ago), so one project's queue never starves another's, however long it is. A
// job that waits longer than `maxWaitMs` is refused with 503 function_busy.
import { AppError } from '../errors.ts';

interface KeyState {
  running: number;
  /** when the key last got a slot (a counter): the tie-breaker between equally served keys */
  servedAt: number;
}

export class Gate {
  private running = 0;
  private served = 0;
  /** keys with running or waiting jobs (no others, so that the map stays as small as the load) */
  private readonly keys = new Map<string, KeyState>();
  private readonly queues = new Map<string, Array<() => void>>();

  constructor(
    private readonly size: number,
    private readonly perKey: number,
    private readonly maxWaitMs: number,
  ) {}

  async run<T>(key: string, job: () => Promise<T>): Promise<T> {
    // every free slot is handed out as it frees, so whoever still waits is over a limit this job is
    // under: it may start at once (synchronously, as a caller that spawns its worker expects)
    if (this.running < this.size && this.count(key) < this.perKey) this.take(key);
    else await this.wait(key);
    try {
      return await job();
    } finally {
      this.release(key);
    }
  }

  /** jobs running and waiting (metrics) */
  stats(): { running: number; queued: number } {
    let queued = 0;
    for (const q of this.queues.values()) queued += q.length;
    return { running: this.running, queued };
  }

  private count(key: string): number {
    return this.keys.get(key)?.running ?? 0;
  }

  private take(key: string): void {
    this.running++;
    this.keys.set(key, { running: this.count(key) + 1, servedAt: ++this.served });
  }

  private forgetIfIdle(key: string): void {
    if (this.count(key) === 0 && !this.queues.has(key)) this.keys.delete(key);
  }

  /** Resolves once `release` has given the job a slot (and taken it for the job). */
  private wait(key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const queue = this.queues.get(key)!;
        queue.splice(queue.indexOf(wake), 1);
        if (queue.length === 0) this.queues.delete(key);
        this.forgetIfIdle(key);
        reject(new AppError('function_busy.queue'));
      }, this.maxWaitMs);
      const queue = this.queues.get(key);
      if (queue) queue.push(wake);
      else this.queues.set(key, [wake]);
      if (!this.keys.has(key)) this.keys.set(key, { running: 0, servedAt: 0 });
    });
  }

  private release(key: string): void {
    this.running--;
    this.keys.get(key)!.running--;
    this.forgetIfIdle(key);
    while (this.running < this.size) {
      let next: string | undefined;
      let best: KeyState | undefined;
      for (const k of this.queues.keys()) {
        const state = this.keys.get(k)!;
        if (state.running >= this.perKey) continue;
        if (!best || state.running < best.running || (state.running === best.running && state.servedAt < best.servedAt)) {
          next = k;
          best = state;
        }
      }
      if (next === undefined) return;
      const queue = this.queues.get(next)!;
      const wake = queue.shift()!;
      if (queue.length === 0) this.queues.delete(next);
      this.take(next);
      wake();
    }
  }
}
