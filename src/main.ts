// Composition root of the service. With the baseplate command (src/cli/cli.ts), the only file
// that reads process.env.
import { loadConfig, uvThreadpoolSize } from './config.ts';
import { checkEngineOptions, engineOptions, openEngine } from './storage/open-engine.ts';
import { StorageFailure, type Engine } from './storage/engine.ts';
import { buildServices, type Services } from './services/index.ts';
import { buildApp } from './app.ts';
import { systemClock } from './lib/clock.ts';
import { loadMasterKey, SecretBox } from './lib/secret-box.ts';
import { createLogger, flushLogger } from './lib/logger.ts';
import { databaseTarget, withoutPassword } from './lib/database-target.ts';
import { boundYoungGeneration, holdYoungGeneration, semiSpaceFlagGiven, SEMI_SPACE_MIB } from './lib/young-generation.ts';
import { boundOldGenerationGrowth, growthFlagGiven } from './lib/old-generation.ts';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

// Files and directories the service creates are its own alone: the embedded engine's databases
// hold password hashes, tokens and sealed secrets (they were world-readable under the usual 022)
process.umask(0o077);
// at info until the configuration names the level
const log = createLogger('info');
const warn = (msg: string) => log.warn(msg);
// Node's own warnings (deprecations, listener leaks) are lines of the same logger, not stderr text
process.removeAllListeners('warning');
process.on('warning', (w) => log.warn({ warning: w.name }, w.message));
// a failure nothing caught ends the process as Node would, but as one line of the logger
process.on('uncaughtException', (err) => {
  log.fatal({ err }, 'uncaught exception');
  flushLogger(log);
  process.exit(1);
});

/**
 * A start-up failure (configuration, master key, database) ends the process with one line naming
 * the cause: no stack trace, and never the DATABASE_URL password (a driver message could quote it).
 */
function fatal(msg: string): never {
  const text = withoutPassword(msg, process.env.DATABASE_URL);
  if (log.level === 'silent') log.level = 'fatal'; // a failed start is always told
  log.fatal(text);
  flushLogger(log);
  process.exit(1);
}

/** Runs one start-up step; a failure ends the process with `what` and the cause. */
async function step<T>(what: string, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // a database failure's message is the one for clients; the operator needs its cause
    fatal(`${what}${err instanceof StorageFailure ? err.why : err instanceof Error ? err.message : String(err)}`);
  }
}

async function start() {
  // started without the launchers' flag (node dist/main.js, baseplate serve): the softer bound
  const boundYoung = !semiSpaceFlagGiven(process.execArgv, process.env.NODE_OPTIONS);
  if (boundYoung) holdYoungGeneration();
  // every setting is checked before anything is written (the master key file, the database)
  const config = await step('invalid configuration: ', () => loadConfig(process.env));
  const smtpCa = await step('invalid configuration: SMTP_CA_FILE: ', () => (config.email.caFile ? readFileSync(config.email.caFile, 'utf8') : undefined));
  await step('invalid configuration: ', () => checkEngineOptions(engineOptions(config)));
  log.level = config.logLevel;
  if (!growthFlagGiven(process.execArgv)) boundOldGenerationGrowth();
  // the key comes first: a PostgreSQL deployment without one must not touch its database
  const master = await step('', () =>
    loadMasterKey({ env: config.masterKey, engine: config.databaseUrl ? 'postgres' : 'sqlite', dataDir: config.dataDir, warn }),
  );
  const engine = await step(`cannot open the database (${databaseTarget(config.databaseUrl, config.dataDir)}): `, () =>
    openEngine(engineOptions(config)),
  );
  const services = buildServices(engine, config, systemClock, {
    log,
    secrets: new SecretBox(master.key),
    smtpCa,
  });
  if (config.email.allowPrivateHosts) warn('EMAIL_ALLOW_PRIVATE_HOSTS is on: projects may send through loopback and private SMTP hosts. Never use this in production.');
  const threads = uvThreadpoolSize(process.env.UV_THREADPOOL_SIZE);
  if (config.argon2.concurrency >= threads)
    warn(`PASSWORD_HASH_CONCURRENCY (${config.argon2.concurrency}) is not below libuv's thread pool (UV_THREADPOOL_SIZE, ${threads}): password hashes can hold every thread, and file I/O then waits behind them`);
  const app = await buildApp({ config, engine, services, logger: log });
  await step(`cannot listen on ${config.host}:${config.port}: `, () => app.listen({ port: config.port, host: config.host }));
  if (boundYoung) boundYoungGeneration(SEMI_SPACE_MIB);
  const port = (app.server.address() as { port: number }).port;
  const consoleUrl = config.appUrl === `http://localhost:${config.port}/` ? `http://localhost:${port}/` : config.appUrl;
  app.log.info(`baseplate serving on port ${port} with the ${engine.kind} engine; the console: ${consoleUrl}`);
  return { app, services, engine, shutdownTimeoutMs: config.shutdownTimeoutMs };
}

/**
 * SIGTERM or SIGINT: stop accepting connections, let the requests in flight finish (one arriving
 * meanwhile on an open connection gets 503 shutting_down), stop the function sandboxes, hand the
 * emails already promised to their providers, close the engine, exit 0. A repeated signal changes
 * nothing: Ctrl-C reaches `npm start` and node alike, and npm forwards its own. Past
 * SHUTDOWN_TIMEOUT_MS the process exits with 1 all the same.
 */
function stopOnSignals(app: FastifyInstance, services: Services, engine: Engine, timeoutMs: number): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing the requests in flight');
    setTimeout(() => {
      log.error(`shutdown took longer than SHUTDOWN_TIMEOUT_MS (${timeoutMs} ms): exiting with work unfinished`);
      flushLogger(log);
      process.exit(1);
    }, timeoutMs).unref();
    try {
      await app.close(); // waits for the requests in flight, then stops the sandboxes
      await services.emailFlows.settle();
      await engine.close();
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      flushLogger(log);
      process.exit(1);
    }
    log.info('stopped');
    flushLogger(log);
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop(signal));
}

const { app, services, engine, shutdownTimeoutMs } = await start();
stopOnSignals(app, services, engine, shutdownTimeoutMs);
