// Composition root: the only file that reads process.env.
import { loadConfig } from './config.ts';
import { engineOptions, openEngine } from './storage/open-engine.ts';
import { StorageFailure } from './storage/engine.ts';
import { buildServices } from './services/index.ts';
import { buildApp } from './app.ts';
import { systemClock } from './lib/clock.ts';
import { loadMasterKey, SecretBox } from './lib/secret-box.ts';
import { createLogger, flushLogger } from './lib/logger.ts';
import { readFileSync } from 'node:fs';

// at info until the configuration names the level
const log = createLogger('info');
const warn = (msg: string) => log.warn(msg);

/** Where the database is, without credentials: what an operator needs to see in a start-up failure. */
function databaseTarget(url: string | null, dataDir: string): string {
  if (!url) return `the embedded engine in ${dataDir}`;
  try {
    const u = new URL(url);
    return `PostgreSQL at ${u.host}${u.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/**
 * A start-up failure (configuration, master key, database) ends the process with one line naming
 * the cause: no stack trace, and never the DATABASE_URL password (a driver message could quote it).
 */
function fatal(msg: string): never {
  let text = msg.replace(/\s+/g, ' ');
  try {
    const password = new URL(process.env.DATABASE_URL ?? '').password;
    if (password) for (const form of new Set([password, decodeURIComponent(password)])) text = text.split(form).join('***');
  } catch {
    // no URL, nothing to hide
  }
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
  // isolated-vm (edge functions) needs it on Node 20+; `npm start` passes it
  if (!process.execArgv.includes('--no-node-snapshot') && !(process.env.NODE_OPTIONS ?? '').includes('--no-node-snapshot'))
    warn('node was started without --no-node-snapshot: edge functions may crash the process; use npm start');
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
  const port = (app.server.address() as { port: number }).port;
  const consoleUrl = config.appUrl === `http://localhost:${config.port}/` ? `http://localhost:${port}/` : config.appUrl;
  app.log.info(`baseplate serving on port ${port} with the ${engine.kind} engine; the console: ${consoleUrl}`);
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
