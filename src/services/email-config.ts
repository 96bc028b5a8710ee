// A project's email configuration (SPEC 2 "Project email configuration", 4.9; CONTRACT §7).
// Secrets are sealed with the server's master key, bound to the project and field, and never leave
// the service: responses carry only `has_*` booleans. The SMTP host is checked when saved (syntax,
// literal addresses) and again by the mailer at every send (DNS, pinning).
import type { Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { SecretBoxError, type SecretBox } from '../lib/secret-box.ts';
import { checkHost, HostRejected } from '../lib/net-guard.ts';
import { charLength, isEmail, normalizeEmail } from '../lib/validate.ts';
import { AppError } from '../errors.ts';
import { DeliveryError, type Mailer, type SmtpSettings } from '../email/mailer.ts';
import { escapeHtml } from '../email/templates.ts';

export const SMTP_PORTS = [25, 465, 587, 2525] as const;
export const ENCRYPTIONS = ['none', 'ssl', 'tls'] as const;
export type Provider = 'smtp' | 'emailapi';

export interface EmailConfigView {
  provider: Provider | null;
  from_address: string | null;
  from_name: string | null;
  smtp_host: string | null;
  smtp_port: number | null;
  smtp_username: string | null;
  smtp_encryption: (typeof ENCRYPTIONS)[number] | null;
  require_email_confirmation: boolean;
  has_smtp_password: boolean;
  has_emailapi_api_key: boolean;
}

export interface EmailConfigInput {
  provider?: string;
  from_address?: string;
  from_name?: string;
  smtp_host?: string | null;
  smtp_port?: number | null;
  smtp_username?: string | null;
  smtp_encryption?: string | null;
  smtp_password?: string;
  emailapi_api_key?: string;
  require_email_confirmation?: boolean;
}

interface Row {
  provider: Provider;
  from_address: string;
  from_name: string;
  smtp_host: string | null;
  smtp_port: number | null;
  smtp_username: string | null;
  smtp_encryption: SmtpSettings['encryption'] | null;
  smtp_password_sealed: string | null;
  emailapi_api_key_sealed: string | null;
  require_email_confirmation: boolean | number;
}

const COLUMNS = 'provider, from_address, from_name, smtp_host, smtp_port, smtp_username, smtp_encryption, smtp_password_sealed, emailapi_api_key_sealed, require_email_confirmation';
const SECRET_MAX = 1024;

/** How the service reaches a provider; built from the server config, replaced in tests. */
export interface MailerFactory {
  smtp(settings: SmtpSettings): Mailer;
  emailapi(apiKey: string): Mailer;
}

/** What a flow needs to send: the sender and a mailer, or null when no provider is configured. */
export interface ProjectMailer {
  from: { name: string; address: string };
  mailer: Mailer;
}

function hostProblem(reason: HostRejected['reason']) {
  if (reason === 'single_label') return 'validation_failed.smtp_host_single_label' as const;
  if (reason === 'localhost' || reason === 'private_address') return 'validation_failed.smtp_host_private' as const;
  return 'validation_failed.smtp_host_invalid' as const;
}

export class EmailConfigService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly mailers: MailerFactory,
    private readonly allowPrivateHosts: boolean,
  ) {}

  /** Under the project's share (Engine.callers): the public sign-up and email flows read it. */
  private async row(projectId: string): Promise<Row | undefined> {
    const db = await this.engine.callers(projectId);
    return db.get<Row>(`SELECT ${COLUMNS} FROM ${db.t('_bp_email_config')} WHERE id = 1`);
  }

  private view(r: Row | undefined): EmailConfigView {
    return {
      provider: r?.provider ?? null,
      from_address: r?.from_address ?? null,
      from_name: r?.from_name ?? null,
      smtp_host: r?.smtp_host ?? null,
      smtp_port: r?.smtp_port ?? null,
      smtp_username: r?.smtp_username ?? null,
      smtp_encryption: r?.smtp_encryption ?? null,
      require_email_confirmation: Boolean(r?.require_email_confirmation ?? false),
      has_smtp_password: Boolean(r?.smtp_password_sealed),
      has_emailapi_api_key: Boolean(r?.emailapi_api_key_sealed),
    };
  }

  async get(projectId: string): Promise<EmailConfigView> {
    return this.view(await this.row(projectId));
  }

  async requiresConfirmation(projectId: string): Promise<boolean> {
    return Boolean((await this.row(projectId))?.require_email_confirmation ?? false);
  }

  /** Creates or updates. Omitted fields keep their value; an empty secret clears it. */
  async put(projectId: string, input: EmailConfigInput): Promise<EmailConfigView> {
    const cur = await this.row(projectId);
    const seal = (plain: string | undefined, field: string, stored: string | null): string | null => {
      if (plain === undefined) return stored;
      if (plain === '') return null;
      if (charLength(plain) > SECRET_MAX) throw new AppError('validation_failed.secret_too_long', { field, max: SECRET_MAX });
      // sent as an HTTP header value: a control character would fail every send as "unreachable"
      if (field === 'emailapi_api_key' && !/^[\x21-\x7e]+$/.test(plain)) throw new AppError('validation_failed.emailapi_api_key');
      return this.secrets.seal(plain, `${projectId}:${field}`);
    };
    const provider = input.provider ?? cur?.provider;
    if (provider === undefined) throw new AppError('validation_failed.provider_required');
    if (provider !== 'smtp' && provider !== 'emailapi') throw new AppError('validation_failed.provider');
    const next: Row = {
      provider,
      from_address: input.from_address !== undefined ? normalizeEmail(input.from_address) : (cur?.from_address ?? ''),
      from_name: input.from_name !== undefined ? input.from_name.trim() : (cur?.from_name ?? ''),
      smtp_host: input.smtp_host !== undefined ? input.smtp_host : (cur?.smtp_host ?? null),
      smtp_port: input.smtp_port !== undefined ? input.smtp_port : (cur?.smtp_port ?? null),
      smtp_username: input.smtp_username !== undefined ? input.smtp_username : (cur?.smtp_username ?? null),
      smtp_encryption: (input.smtp_encryption !== undefined ? input.smtp_encryption : (cur?.smtp_encryption ?? null)) as Row['smtp_encryption'],
      smtp_password_sealed: seal(input.smtp_password, 'smtp_password', cur?.smtp_password_sealed ?? null),
      emailapi_api_key_sealed: seal(input.emailapi_api_key, 'emailapi_api_key', cur?.emailapi_api_key_sealed ?? null),
      require_email_confirmation: input.require_email_confirmation ?? Boolean(cur?.require_email_confirmation ?? false),
    };
    if (next.from_address === '') throw new AppError('validation_failed.missing', { field: 'from_address' });
    if (!isEmail(next.from_address)) throw new AppError('validation_failed.not_email', { field: 'from_address' });
    if (charLength(next.from_name) > 100 || /[\r\n<>"]/.test(next.from_name))
      throw new AppError('validation_failed.from_name');
    if (next.smtp_host !== null) {
      try {
        next.smtp_host = checkHost(next.smtp_host, { allowPrivate: this.allowPrivateHosts }).host;
      } catch (err) {
        if (err instanceof HostRejected) throw new AppError(hostProblem(err.reason), { reason: err.reason });
        throw err;
      }
    }
    if (next.smtp_port !== null && !(SMTP_PORTS as readonly number[]).includes(next.smtp_port))
      throw new AppError('validation_failed.one_of', { field: 'smtp_port', allowed: SMTP_PORTS });
    if (next.smtp_encryption !== null && !(ENCRYPTIONS as readonly string[]).includes(next.smtp_encryption))
      throw new AppError('validation_failed.one_of', { field: 'smtp_encryption', allowed: ENCRYPTIONS });
    if (next.smtp_username !== null && (charLength(next.smtp_username) > 320 || /[\r\n]/.test(next.smtp_username)))
      throw new AppError('validation_failed.smtp_username');
    if (provider === 'smtp') {
      for (const field of ['smtp_host', 'smtp_port', 'smtp_encryption'] as const) {
        if (next[field] === null) throw new AppError('validation_failed.required_for_provider', { field, provider: 'smtp' });
      }
    } else if (next.emailapi_api_key_sealed === null) {
      throw new AppError('validation_failed.required_for_provider', { field: 'emailapi_api_key', provider: 'emailapi' });
    }
    const db = await this.engine.project(projectId);
    const values = [next.provider, next.from_address, next.from_name, next.smtp_host, next.smtp_port, next.smtp_username, next.smtp_encryption,
      next.smtp_password_sealed, next.emailapi_api_key_sealed, next.require_email_confirmation];
    await db.run(
      `INSERT INTO ${db.t('_bp_email_config')} (id, ${COLUMNS}, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET ${COLUMNS.split(', ').map((c) => `${c} = excluded.${c}`).join(', ')}, updated_at = excluded.updated_at`,
      [...values, this.clock.now().toISOString()],
    );
    return this.view(next);
  }

  /** The project's sender and mailer, or null when no provider is configured. */
  async mailerFor(projectId: string): Promise<ProjectMailer | null> {
    const r = await this.row(projectId);
    if (!r) return null;
    const open = (sealed: string | null, field: string) => (sealed === null ? null : this.openSecret(projectId, sealed, field));
    const from = { name: r.from_name, address: r.from_address };
    if (r.provider === 'emailapi') {
      const key = open(r.emailapi_api_key_sealed, 'emailapi_api_key');
      return key === null ? null : { from, mailer: this.mailers.emailapi(key) };
    }
    const settings: SmtpSettings = {
      host: r.smtp_host!,
      port: r.smtp_port!,
      encryption: r.smtp_encryption!,
      username: r.smtp_username,
      password: open(r.smtp_password_sealed, 'smtp_password'),
    };
    return { from, mailer: this.mailers.smtp(settings) };
  }

  /** A stored secret; one sealed under another MASTER_KEY (changed, or restored from elsewhere) is the owner's to set again (422). */
  private openSecret(projectId: string, sealed: string, field: string): string {
    try {
      return this.secrets.open(sealed, `${projectId}:${field}`);
    } catch (err) {
      if (err instanceof SecretBoxError) throw new AppError('validation_failed.secret_unreadable', { field });
      throw err;
    }
  }

  /** POST email-config/test: 200 { sent: true }, 422 without a provider, 502 with a short reason. */
  async sendTest(projectId: string, projectName: string, to: string): Promise<{ sent: true }> {
    const address = normalizeEmail(to);
    if (!isEmail(address)) throw new AppError('validation_failed.not_email', { field: 'to' });
    const pm = await this.mailerFor(projectId);
    if (!pm) throw new AppError('email_not_configured');
    const subject = `Test email from ${projectName}`.replace(/[\r\n]+/g, ' ');
    const text = `This is a test email from ${projectName}. The email configuration works.`;
    const html = `<p>${escapeHtml(text)}</p>`;
    try {
      await pm.mailer.send({ from: pm.from, to: address, subject, html, text });
    } catch (err) {
      if (err instanceof DeliveryError) throw new AppError('email_delivery_failed', { cause: err.message, reason: err.reason });
      throw err;
    }
    return { sent: true };
  }
}
