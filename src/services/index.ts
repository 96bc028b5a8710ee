// Builds every service from the engine and config: the one place they are wired together.
import type { Engine } from '../storage/engine.ts';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { argon2Hasher, type PasswordHasher } from '../lib/password.ts';
import { AccountService } from './accounts.ts';
import { sharedHasher } from './password-share.ts';
import { ProjectService } from './projects.ts';
import { TableService } from './tables.ts';
import { LoginThrottle } from './login-throttle.ts';
import { KeyService } from './keys.ts';
import { EndUserService } from './end-users.ts';
import { PolicyService, type PolicyLog } from './policies.ts';
import { RowService } from './rows/rows.ts';
import { OwnerRowService } from './rows/owner-rows.ts';
import { PolicySimulator } from './rows/simulator.ts';
import { ProjectSchemaCache } from './project-schema.ts';
import { DataPlaneService } from './data-plane.ts';
import { AuthSettingsService } from './auth-settings.ts';
import { EmailConfigService, type MailerFactory } from './email-config.ts';
import { EmailTemplateService } from './email-templates.ts';
import { EmailFlowService } from './email-flows.ts';
import { EmailRateLimit } from './email-rate-limit.ts';
import { PurposeTokens } from './purpose-tokens.ts';
import { FunctionService } from './functions.ts';
import { SandboxPool } from '../functions/pool.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { subjectDigest } from '../lib/tokens.ts';
import { systemResolver, type Resolver } from '../lib/net-guard.ts';
import { emailApiMailer, smtpMailer, type Mailer } from '../email/mailer.ts';
import { Metrics, noMetrics, type ServiceMetrics } from '../lib/metrics.ts';
import { createLogger } from '../lib/logger.ts';

export interface Services {
  accounts: AccountService;
  projects: ProjectService;
  tables: TableService;
  keys: KeyService;
  endUsers: EndUserService;
  policies: PolicyService;
  rows: RowService;
  ownerRows: OwnerRowService;
  simulator: PolicySimulator;
  dataPlane: DataPlaneService;
  authSettings: AuthSettingsService;
  emailConfig: EmailConfigService;
  emailTemplates: EmailTemplateService;
  emailFlows: EmailFlowService;
  functions: FunctionService;
  throttle: LoginThrottle;
  hasher: PasswordHasher;
  /** this instance's metrics (GET /metrics); null when METRICS is off */
  metrics: Metrics | null;
}

export interface ServiceOptions {
  log?: PolicyLog;
  /** seals stored secrets with the master key (main.ts loads it; tests make their own) */
  secrets: SecretBox;
  /** DNS for the SMTP host checks (default: the system resolver) */
  resolver?: Resolver;
  /** extra CA certificates (PEM) trusted for SMTP TLS */
  smtpCa?: string;
  /** replaces how providers are reached (default: real SMTP and HTTP from the config) */
  mailers?: MailerFactory;
}

/** Every send through a provider is counted as sent or failed (emails_total). */
function countedMailers(mailers: MailerFactory, metrics: ServiceMetrics): MailerFactory {
  const counted = (provider: 'smtp' | 'emailapi', mailer: Mailer): Mailer => ({
    async send(email) {
      try {
        await mailer.send(email);
      } catch (err) {
        metrics.emailSent(provider, false);
        throw err;
      }
      metrics.emailSent(provider, true);
    },
  });
  return { smtp: (s) => counted('smtp', mailers.smtp(s)), emailapi: (key) => counted('emailapi', mailers.emailapi(key)) };
}

function sandboxPool(config: Config): SandboxPool {
  return new SandboxPool(
    { memoryMb: config.functions.memoryMb, timeoutMs: config.functions.timeoutMs },
    {
      size: config.functions.concurrency,
      perProject: config.functions.projectConcurrency,
      recycleGrowthMb: config.functions.recycleGrowthMb,
      idleMs: config.functions.idleMs,
      niceness: config.functions.niceness,
    },
  );
}

export function buildServices(engine: Engine, config: Config, clock: Clock, opts: ServiceOptions): Services {
  const sandboxes = sandboxPool(config);
  const hasher = sharedHasher(argon2Hasher(config.argon2), config.argon2.concurrency);
  const metrics = config.metrics.enabled
    ? new Metrics({ engineKind: engine.kind, engine: () => engine.stats(), functions: () => sandboxes.stats(), passwords: () => hasher.stats() })
    : null;
  const report: ServiceMetrics = metrics ?? noMetrics;
  const mailers = countedMailers(
    opts.mailers ?? {
      smtp: (s) => smtpMailer(s, { resolver: opts.resolver ?? systemResolver, allowPrivateHosts: config.email.allowPrivateHosts, timeoutMs: config.email.timeoutMs, ca: opts.smtpCa }),
      emailapi: (key) => emailApiMailer(key, { baseUrl: config.email.apiBaseUrl, timeoutMs: config.email.timeoutMs }),
    },
    report,
  );
  // rate-limit subjects are keyed with the master key, so every node sharing it counts alike
  const subjects = subjectDigest(opts.secrets.mac('rate-limit subjects'));
  const throttle = new LoginThrottle(engine.platform, (tenant) => engine.platformFor(tenant), clock, subjects, () => report.refused('login_throttle'));
  const tables = new TableService(engine, clock);
  const log = opts.log ?? createLogger(config.logLevel);
  const policies = new PolicyService(engine, tables, clock, log);
  const projects = new ProjectService(engine, clock);
  const authSettings = new AuthSettingsService(engine, clock, config.appUrl);
  const emailTemplates = new EmailTemplateService(engine, clock);
  const emailConfig = new EmailConfigService(engine, clock, opts.secrets, mailers, config.email.allowPrivateHosts);
  const endUsers = new EndUserService(engine, hasher, clock, throttle, config.tokenTtlMs, (pid) => emailConfig.requiresConfirmation(pid));
  const schemas = new ProjectSchemaCache(engine, { tableInfos: (db) => tables.tableInfos(db), enabledByTable: (db) => policies.enabledByTable(db) });
  const rows = new RowService(engine, schemas, policies, clock, config.maxRows);
  const keys = new KeyService(engine, clock);
  const projectName = async (pid: string) => (await projects.find(pid))?.name ?? '';
  return {
    hasher,
    throttle,
    metrics,
    accounts: new AccountService(engine, hasher, clock, throttle, config.tokenTtlMs),
    projects,
    tables,
    keys,
    dataPlane: new DataPlaneService(engine, projects, keys, clock, config.guessedReads),
    endUsers,
    policies,
    rows,
    ownerRows: new OwnerRowService(engine, schemas, endUsers, rows),
    simulator: new PolicySimulator(engine, schemas, policies, endUsers, clock),
    functions: new FunctionService(engine, clock, rows, sandboxes, report),
    authSettings,
    emailTemplates,
    emailConfig,
    emailFlows: new EmailFlowService(engine, endUsers, hasher, authSettings, emailConfig, emailTemplates, new EmailRateLimit(clock, subjects, () => report.refused('email_rate_limit')), new PurposeTokens(clock, (db, id) => endUsers.lock(db, id)), projectName, log),
  };
}
