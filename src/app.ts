// buildApp(deps): plugins, routes and error handling. It never listens (main.ts does).
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Config } from './config.ts';
import { StoreMissing, type Engine } from './storage/engine.ts';
import type { Services } from './services/index.ts';
import { AppError } from './errors.ts';
import { clientErrorHandler, installErrorHandling, refuseConnect } from './http/error-handler.ts';
import { healthRoutes } from './http/routes/health.ts';
import { accountRoutes } from './http/routes/accounts.ts';
import { projectRoutes } from './http/routes/projects.ts';
import { keyRoutes } from './http/routes/keys.ts';
import { policyRoutes } from './http/routes/policies.ts';
import { endUserRoutes } from './http/routes/end-users.ts';
import { restRoutes } from './http/routes/rest.ts';
import { ownerRowRoutes } from './http/routes/owner-rows.ts';
import { authSettingsRoutes } from './http/routes/auth-settings.ts';
import { emailConfigRoutes } from './http/routes/email-config.ts';
import { emailTemplateRoutes } from './http/routes/email-templates.ts';
import { emailFlowRoutes } from './http/routes/email-flows.ts';
import { functionRoutes } from './http/routes/functions.ts';
import { supabaseCompatRoutes } from './http/routes/compat/index.ts';
import { consoleRoutes } from './http/console.ts';
import { ROOT } from './bundles.ts';
import { join } from 'node:path';
import { installCors } from './http/cors.ts';
import { lazyValidators } from './http/lazy-validators.ts';
import { installOpenApi } from './http/openapi.ts';
import { decoratePlatformRequest } from './http/platform-auth.ts';
import { decorateDataPlaneRequest } from './http/data-plane-auth.ts';
import { installRequestLog, logRequest } from './http/request-log.ts';
import { idleCollection } from './lib/idle-collection.ts';
import { releaseIdleMemory } from './lib/malloc-trim.ts';
import { badJsonText } from './lib/text.ts';
import { installMetrics, metricsRoute, UNMATCHED_ROUTE, UNPARSED_METHOD } from './http/metrics.ts';
import type { Metrics } from './lib/metrics.ts';
import { createLogger, type Logger } from './lib/logger.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './rest-query/values.ts';

export interface AppDeps {
  config: Config;
  engine: Engine;
  services: Services;
  /** Where logs go (default stdout); tests pass a stream to read them. */
  /** the service's logger (main.ts); absent: one on standard output at the configured level */
  logger?: Logger;
  /** the built owner console (default dist/console/; tests pass their own) */
  consoleDir?: string;
}

export async function buildApp({ config, engine, services, logger, consoleDir }: AppDeps): Promise<FastifyInstance> {
  const app = createServer(config, logger ?? createLogger(config.logLevel), services.metrics);
  refuseConnect(app);
  installRequestGate(app);
  installJsonBodyParser(app);
  installErrorHandling(app);
  installRequestLog(app);
  if (services.metrics) installMetrics(app, services.metrics);
  if (config.idleCollectMs > 0) installIdleCollection(app, config.idleCollectMs);
  installCors(app, config.corsOrigins);
  // the request context the auth hooks resolve once (http/platform-auth.ts, http/data-plane-auth.ts)
  decoratePlatformRequest(app);
  decorateDataPlaneRequest(app);
  await installOpenApi(app);
  if (services.metrics) metricsRoute(app, services.metrics, config.metrics.token);
  registerRoutes(app, config, engine, services);
  forgetMissingProjects(app, services);
  consoleRoutes(app, consoleDir ?? join(ROOT, 'dist', 'console'));
  await app.ready();
  return app;
}

/**
 * A project a node remembered (ProjectService.exists) whose store turned out to be gone (deleted
 * through another node) is forgotten: its next request is looked up again (404) instead of failing
 * at its first statement each time.
 */
function forgetMissingProjects(app: FastifyInstance, services: Services): void {
  app.addHook('onError', async (request, _reply, error) => {
    const id = (request.params as { project_id?: unknown } | undefined)?.project_id;
    if (error instanceof StoreMissing && typeof id === 'string') services.projects.forget(id);
  });
}

function createServer(config: Config, logger: Logger, metrics: Metrics | null): FastifyInstance {
  return Fastify({
    bodyLimit: config.bodyLimitBytes,
    // a client that never finishes its request is answered 408 and let go: one that sent its
    // headers and then a byte now and then otherwise held its connection (and a file descriptor)
    // for as long as it liked. Node checks every so often: a quarter of the timeout, 250 ms to 30 s.
    ...(config.requestTimeoutMs > 0 && {
      requestTimeout: config.requestTimeoutMs,
      http: { headersTimeout: Math.min(60000, config.requestTimeoutMs), connectionsCheckingInterval: Math.min(30000, Math.max(250, Math.floor(config.requestTimeoutMs / 4))) },
    }),
    // a hop count trusts the n nearest proxies (the function form of proxy-addr's hop count)
    trustProxy: typeof config.trustProxy === 'number' ? ((_addr: string, hop: number) => hop < (config.trustProxy as number)) : config.trustProxy,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    loggerInstance: logger as FastifyBaseLogger,
    // one line per request instead (http/request-log.ts)
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { maxParamLength: 1000 },
    frameworkErrors: (error, request, reply) => {
      reply.header('X-Request-Id', request.id);
      const err = new AppError(error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'not_found.resource' : 'bad_request.url');
      void (reply as unknown as import('fastify').FastifyReply).status(err.status).send(err.toJSON());
      // no hook runs for a request the router refused: it is logged and counted here
      logRequest(request, err.status, 0, err.code);
      metrics?.httpRequest(request.method, UNMATCHED_ROUTE, err.status, 0);
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
    schemaController: { compilersFactory: { buildValidator: lazyValidators() } },
    // the parser's 400/408/431 and the 503 while closing in the flat shape too (installRequestGate)
    clientErrorHandler: clientErrorHandler((status) => metrics?.httpRequest(UNPARSED_METHOD, UNMATCHED_ROUTE, status, 0)),
    return503OnClosing: false,
  });
}

// A request that reaches a closing server (pipelined, or on a busy keep-alive connection) is
// refused with the flat error; Fastify's own 503 has another shape.
function installRequestGate(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // A connection whose request was in flight is closed soon after its answer instead of kept
    // alive (the server closes only the connections idle when closing begins, and one left idle
    // later would hold the close until the client leaves); a request it already carries still
    // gets its answer, 503 shutting_down.
    app.server.keepAliveTimeout = 1;
  });

  // callback hooks on the hot path: an async one costs a promise and a tick per request
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    if (!closing) return done();
    reply.header('Connection', 'close');
    done(new AppError('shutting_down'));
  });
}

// After IDLE_GC_MS without a request, full garbage collections give the memory of the last burst
// back (lib/idle-collection.ts), then the C allocator the pages they and the burst freed, and the
// file pages no longer used, once (lib/malloc-trim.ts: it walks every heap under its lock, some
// milliseconds on a large one). The last two also a second after the server listens: start-up's
// are not worth waiting for an idle spell (V8 lets the collections end one only after 5 s of slow
// allocation), and pages the first requests need again are mapped again from the page cache.
const AFTER_START_MS = 1000;

function installIdleCollection(app: FastifyInstance, quietMs: number): void {
  const idle = idleCollection(quietMs, { settled: releaseIdleMemory });
  app.addHook('onRequest', (_request, _reply, done) => {
    idle.touch();
    done();
  });
  app.addHook('onListen', (done) => {
    setTimeout(releaseIdleMemory, AFTER_START_MS).unref();
    done();
  });
  app.addHook('onClose', async () => idle.stop());
}

// JSON is the only body type: parsed here so that malformed JSON is a 400 invalid_json and an
// empty body is simply no body; any other content type with a body is a 415.
function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new AppError('invalid_json'), undefined);
    }
    if (nestsDeeperThan(parsed, MAX_JSON_DEPTH))
      return done(new AppError('too_deep.body', { max: MAX_JSON_DEPTH }), undefined);
    // Text no engine stores as sent (lib/text.ts): one rule for every field, here. Only an escape
    // in the JSON text can make either.
    const bad = badJsonText(text, parsed);
    if (bad) return done(new AppError(bad), undefined);
    done(null, parsed);
  });
}

function registerRoutes(app: FastifyInstance, config: Config, engine: Engine, services: Services): void {
  healthRoutes(app, engine);
  accountRoutes(app, services.accounts);
  projectRoutes(app, services.accounts, services.projects, services.tables);
  keyRoutes(app, services.accounts, services.projects, services.keys);
  policyRoutes(app, services.accounts, services.projects, services.policies);
  ownerRowRoutes(app, services.accounts, services.projects, services.ownerRows, services.simulator);
  endUserRoutes(app, services.accounts, services.projects, services.endUsers, services.emailFlows, config.maxRows);
  restRoutes(app, services.dataPlane, services.rows);
  authSettingsRoutes(app, services.accounts, services.projects, services.authSettings);
  emailConfigRoutes(app, services.accounts, services.projects, services.emailConfig);
  emailTemplateRoutes(app, services.accounts, services.projects, services.emailTemplates);
  emailFlowRoutes(app, services.projects, services.endUsers, services.emailFlows);
  functionRoutes(app, services.accounts, services.projects, services.dataPlane, services.functions);
  supabaseCompatRoutes(app, services);
}
