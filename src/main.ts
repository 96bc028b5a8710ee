// Composition root of the service. With the baseplate command (src/cli/cli.ts), the only file
// that reads process.env.
import { loadConfig } from './config.ts';
import { engineOptions, openEngine } from './storage/open-engine.ts';
import { StorageFailure } from './storage/engine.ts';
import { buildServices } from './services/index.ts';
import { buildApp } from './app.ts';
import { systemClock } from './lib/clock.ts';
import { loadMasterKey, SecretBox } from './lib/secret-box.ts';
import { createLogger, flushLogger } from './lib/logger.ts';
import { databaseTarget, withoutPassword } from './lib/database-target.ts';
import { readFileSync } from 'node:fs';

// at info until the configuration names the level
const log = createLogger('info');
const warn = (msg: string) => log.warn(msg);

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
  const config = await step('invalid configuration: ', () => loadConfig(process.env));
  log.level = config.logLevel;
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
    smtpCa: config.email.caFile ? readFileSync(config.email.caFile, 'utf8') : undefined,
  });
  if (config.email.allowPrivateHosts) warn('EMAIL_ALLOW_PRIVATE_HOSTS is on: projects may send through loopback and private SMTP hosts. Never use this in production.');
  const app = await buildApp({ config, engine, services, logger: log });
  await step(`cannot listen on ${config.host}:${config.port}: `, () => app.listen({ port: config.port, host: config.host }));
  app.log.info(`baseplate serving on port ${config.port} with the ${engine.kind} engine`);
  return { app, services, engine };
}

const { app, services, engine } = await start();

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await app.close(); // stops accepting requests and the function sandboxes
    await services.emailFlows.settle(); // emails already promised are handed to their providers
    await engine.close();
    flushLogger(log);
    process.exit(0);
  });
}
