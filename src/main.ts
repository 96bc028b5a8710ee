// Composition root: the only file that reads process.env.
import { loadConfig } from './config.ts';
import { openEngine } from './storage/open-engine.ts';
import { buildServices } from './services/index.ts';
import { buildApp } from './app.ts';
import { systemClock } from './lib/clock.ts';
import { loadMasterKey, SecretBox } from './lib/secret-box.ts';
import { readFileSync } from 'node:fs';

const config = loadConfig(process.env);
// isolated-vm (edge functions) needs it on Node 20+; `npm start` passes it
if (!process.execArgv.includes('--no-node-snapshot') && !(process.env.NODE_OPTIONS ?? '').includes('--no-node-snapshot'))
  process.stderr.write(`${JSON.stringify({ level: 'warn', msg: 'node was started without --no-node-snapshot: edge functions may crash the process; use npm start' })}\n`);
const warn = (msg: string) => process.stderr.write(`${JSON.stringify({ level: 'warn', time: new Date().toISOString(), msg })}\n`);
// the key comes first: a PostgreSQL deployment without one must not touch its database
const master = loadMasterKey({ env: config.masterKey, engine: config.databaseUrl ? 'postgres' : 'sqlite', dataDir: config.dataDir, warn });
const engine = await openEngine({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, statementTimeoutMs: config.statementTimeoutMs, postgres: config.postgres });
const services = buildServices(engine, config, systemClock, {
  secrets: new SecretBox(master.key),
  smtpCa: config.email.caFile ? readFileSync(config.email.caFile, 'utf8') : undefined,
});
if (config.email.allowPrivateHosts) warn('EMAIL_ALLOW_PRIVATE_HOSTS is on: projects may send through loopback and private SMTP hosts. Never use this in production.');
const app = await buildApp({ config, engine, services });

await app.listen({ port: config.port, host: config.host });
app.log.info(`baseplate serving on port ${config.port} with the ${engine.kind} engine`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await app.close(); // stops accepting requests and the function sandboxes
    await services.emailFlows.settle(); // emails already promised are handed to their providers
    await engine.close();
    process.exit(0);
  });
}
