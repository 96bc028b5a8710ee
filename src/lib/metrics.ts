// The service's metrics in Prometheus's text format (prom-client). One registry per service
// instance, so that tests building many apps in one process never collide; Node's own process
// metrics (memory, event-loop delay, GC) are process-wide and collected once per process.
// Events (a request, an invocation, an email, a refusal) move a counter when they happen; states
// (pools, gates, open files) are read from their owners only when scraped, so the hot path pays
// one counter increment and one histogram observation per request, nothing more.
// Labels never carry a project id, a raw URL or any other caller-chosen text: routes are the
// router's patterns, outcomes and reasons come from fixed lists, so series stay bounded whatever
// clients send (a per-project label would grow with every project anyone registers).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineKind, EngineStats } from '../storage/engine.ts';

/** Requests refused to protect the service or other tenants. */
export type Refusal = 'login_throttle' | 'email_rate_limit' | 'project_busy' | 'function_busy';

/** What the services report; `noMetrics` when metrics are off. */
export interface ServiceMetrics {
  /** `outcome`: `ok`, or the error code the invocation answered with */
  functionInvoked(outcome: string, seconds: number): void;
  emailSent(provider: 'smtp' | 'emailapi', delivered: boolean): void;
  refused(reason: Refusal): void;
}

export const noMetrics: ServiceMetrics = {
  functionInvoked: () => undefined,
  emailSent: () => undefined,
  refused: () => undefined,
};

/** What the metrics read when scraped. */
export interface MetricSources {
  engineKind: EngineKind;
  engine(): EngineStats;
  functions(): { processes: number; idle: number; running: number; queued: number };
  /** password hashes and checks (services/password-share.ts) */
  passwords(): { capacity: number; inUse: number; queued: number; waits: number };
}

const PREFIX = 'baseplate_';
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const FUNCTION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

let processRegistry: Registry | null = null;
/** Node's process metrics, shared by every instance in the process (they describe the process). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics implements ServiceMetrics {
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private readonly registry = new Registry();
  private readonly process = processMetrics();
  private readonly requests = this.counter('http_requests_total', 'HTTP requests answered, by route pattern, method and status', ['method', 'route', 'status']);
  private readonly latency = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from a request received to its answer sent, by route pattern and method',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });
  private readonly invocations = new Histogram({
    name: `${PREFIX}function_invocation_duration_seconds`,
    help: 'Function invocations by outcome (ok, or the error code answered) and duration; _count counts them',
    labelNames: ['outcome'] as const,
    buckets: FUNCTION_BUCKETS,
    registers: [this.registry],
  });
  private readonly emails = this.counter('emails_total', 'Emails handed to a provider (sent) or refused by it or unreachable (failed)', ['provider', 'outcome']);
  private readonly refusals = this.counter(
    'refusals_total',
    'Requests refused to protect the service or other tenants: login_throttle, email_rate_limit (429), project_busy, function_busy (503)',
    ['reason'],
  );
  private readonly refreshers: Array<() => void> = [];

  constructor(private readonly sources: MetricSources) {
    this.watchGate();
    const first = sources.engine();
    if (first.pool) this.watchPool();
    if (first.sqlite) this.watchSqlite();
    this.watchFunctions();
    this.watchPasswords();
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status });
    this.latency.observe({ method, route }, seconds);
  }

  functionInvoked(outcome: string, seconds: number): void {
    this.invocations.observe({ outcome }, seconds);
  }

  emailSent(provider: 'smtp' | 'emailapi', delivered: boolean): void {
    this.emails.inc({ provider, outcome: delivered ? 'sent' : 'failed' });
  }

  refused(reason: Refusal): void {
    this.refusals.inc({ reason });
  }

  /** The exposition: the process's metrics, then this instance's, states read now. */
  async text(): Promise<string> {
    for (const refresh of this.refreshers) refresh();
    return (await this.process.metrics()) + (await this.registry.metrics());
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  /** A counter whose total its owner keeps (it only grows): set to that total when scraped. */
  private total(name: string, help: string, read: () => number): void {
    const c = this.counter(name, help, ['engine']);
    const engine = this.sources.engineKind;
    this.refreshers.push(() => {
      c.reset();
      c.inc({ engine }, read());
    });
  }

  private watchGate(): void {
    const engine = this.sources.engineKind;
    const slots = this.gauge('db_gate_slots', 'Statements over project tables that may run at once (SQLite: worker threads; PostgreSQL: pool connections less 2)', ['engine']);
    const inUse = this.gauge('db_gate_slots_in_use', 'Statements over project tables running now', ['engine']);
    const queued = this.gauge('db_gate_queued', 'Statements waiting for a slot', ['engine']);
    const projects = this.gauge('db_gate_queued_projects', 'Projects with statements waiting for a slot', ['engine']);
    let gate = this.sources.engine().gate;
    this.refreshers.push(() => {
      gate = this.sources.engine().gate;
      slots.set({ engine }, gate.capacity);
      inUse.set({ engine }, gate.inUse);
      queued.set({ engine }, gate.queued);
      projects.set({ engine }, gate.queuedKeys);
    });
    // read after the refresher above took this scrape's `gate`
    this.total('db_gate_waits_total', 'Statements that had to wait for a slot (then ran, or were refused with project_busy)', () => gate.waits);
    this.total('db_gate_wait_seconds_total', 'Time statements spent waiting for a slot, added up', () => gate.waitSeconds);
  }

  private watchPool(): void {
    const connections = this.gauge('db_pool_connections', 'PostgreSQL connections of this process: open, and idle among them', ['state']);
    const max = this.gauge('db_pool_max_connections', 'PostgreSQL connections this process may open (PG_POOL_SIZE)');
    const waiting = this.gauge('db_pool_waiting', 'Requests waiting for a PostgreSQL connection');
    this.refreshers.push(() => {
      const pool = this.sources.engine().pool!;
      connections.set({ state: 'open' }, pool.total);
      connections.set({ state: 'idle' }, pool.idle);
      max.set(pool.max);
      waiting.set(pool.waiting);
    });
  }

  private watchSqlite(): void {
    const open = this.gauge('sqlite_open_projects', 'Project files the embedded engine keeps open');
    const limit = this.gauge('sqlite_open_projects_limit', 'Project files the embedded engine may keep open (SQLITE_OPEN_PROJECTS)');
    const threads = this.gauge('sqlite_worker_threads', 'Worker threads running statements over project tables');
    this.refreshers.push(() => {
      const s = this.sources.engine().sqlite!;
      open.set(s.openProjects);
      limit.set(s.maxOpenProjects);
      threads.set(s.workerThreads);
    });
  }

  private watchPasswords(): void {
    const slots = this.gauge('password_hash_slots', 'Password hashes and checks that may run at once (PASSWORD_HASH_CONCURRENCY)');
    const inUse = this.gauge('password_hash_slots_in_use', 'Password hashes and checks running now');
    const queued = this.gauge('password_hash_queued', 'Password hashes and checks waiting for a slot');
    let stats = this.sources.passwords();
    this.refreshers.push(() => {
      stats = this.sources.passwords();
      slots.set(stats.capacity);
      inUse.set(stats.inUse);
      queued.set(stats.queued);
    });
    this.total('password_hash_waits_total', "Password hashes and checks that had to wait for a slot (then ran, or were refused with project_busy)", () => stats.waits);
  }

  private watchFunctions(): void {
    const sandboxes = this.gauge('function_sandboxes', 'Sandbox processes: busy running an invocation, or idle', ['state']);
    const running = this.gauge('function_slots_in_use', 'Invocations and deploy-time checks running');
    const queued = this.gauge('function_queued', 'Invocations and deploy-time checks waiting for a slot');
    this.refreshers.push(() => {
      const f = this.sources.functions();
      sandboxes.set({ state: 'busy' }, f.processes - f.idle);
      sandboxes.set({ state: 'idle' }, f.idle);
      running.set(f.running);
      queued.set(f.queued);
    });
  }
}
