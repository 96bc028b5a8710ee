// Builds every service from the engine and config: the one place they are wired together.
import type { Engine } from '../storage/engine.ts';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { argon2Hasher, type PasswordHasher } from '../lib/password.ts';
import { AccountService } from './accounts.ts';
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
import { emailApiMailer, smtpMailer } from '../email/mailer.ts';

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

const stderrLog: PolicyLog = {
  warn: (obj, msg) => process.stderr.write(`${JSON.stringify({ level: 'warn', time: new Date().toISOString(), msg, ...obj })}\n`),
};

export function buildServices(engine: Engine, config: Config, clock: Clock, opts: ServiceOptions): Services {
  const mailers: MailerFactory = opts.mailers ?? {
    smtp: (s) => smtpMailer(s, { resolver: opts.resolver ?? systemResolver, allowPrivateHosts: config.email.allowPrivateHosts, timeoutMs: config.email.timeoutMs, ca: opts.smtpCa }),
    emailapi: (key) => emailApiMailer(key, { baseUrl: config.email.apiBaseUrl, timeoutMs: config.email.timeoutMs }),
  };
  const hasher = argon2Hasher(config.argon2);
  // rate-limit subjects are keyed with the master key, so every node sharing it counts alike
  const subjects = subjectDigest(opts.secrets.mac('rate-limit subjects'));
  const throttle = new LoginThrottle(engine.platform, clock, subjects);
  const tables = new TableService(engine, clock);
  const log = opts.log ?? stderrLog;
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
    functions: new FunctionService(
      engine,
      clock,
      rows,
      new SandboxPool(
        { memoryMb: config.functions.memoryMb, timeoutMs: config.functions.timeoutMs },
        {
          size: config.functions.concurrency,
          perProject: config.functions.projectConcurrency,
          recycleGrowthMb: config.functions.recycleGrowthMb,
          idleMs: config.functions.idleMs,
          niceness: config.functions.niceness,
        },
      ),
    ),
    authSettings,
    emailTemplates,
    emailConfig,
    emailFlows: new EmailFlowService(engine, endUsers, hasher, authSettings, emailConfig, emailTemplates, new EmailRateLimit(clock, subjects), new PurposeTokens(clock, (db, id) => endUsers.lock(db, id)), projectName, log),
  };
}
