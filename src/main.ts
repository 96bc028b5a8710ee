// Composition root: the only file that reads process.env.
import { loadConfig } from './config.ts';
import { openEngine } from './storage/open-engine.ts';
import { buildServices } from './services/index.ts';
import { buildApp } from './app.ts';
import { systemClock } from './lib/clock.ts';

const config = loadConfig(process.env);
const engine = await openEngine({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, statementTimeoutMs: config.statementTimeoutMs });
const services = buildServices(engine, config, systemClock);
const app = await buildApp({ config, engine, services });

await app.listen({ port: config.port, host: config.host });
app.log.info(`baseplate serving on port ${config.port} with the ${engine.kind} engine`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await app.close();
    await engine.close();
    process.exit(0);
  });
}
