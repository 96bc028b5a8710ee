// Sending one email through a project's provider. The SMTP host is checked and resolved on every
// send and the connection is pinned to the checked address (a DNS answer cannot change between the
// check and the connect), while TLS is verified against the host name. Failures are reduced to a
// short reason: a raw socket error would turn the test endpoint into a port scanner.
import { HostRejected, resolvePublicHost, type Resolver } from '../lib/net-guard.ts';

export interface OutgoingEmail {
  from: { name: string; address: string };
  to: string;
  subject: string;
  html: string;
  text: string;
}

/** The one port the flows use. */
export interface Mailer {
  send(email: OutgoingEmail): Promise<void>;
}

export type DeliveryReason = 'host_not_allowed' | 'connection_failed' | 'tls_failed' | 'authentication_failed' | 'rejected' | 'timeout' | 'provider_error';

const REASON_TEXT: Record<DeliveryReason, string> = {
  host_not_allowed: 'the SMTP host is not a public address',
  connection_failed: 'the mail server could not be reached',
  tls_failed: 'the TLS connection to the mail server failed',
  authentication_failed: 'the mail server refused the credentials',
  rejected: 'the mail server refused the message',
  timeout: 'the mail server did not answer in time',
  provider_error: 'the email provider refused the request',
};

export class DeliveryError extends Error {
  constructor(readonly reason: DeliveryReason) {
    super(REASON_TEXT[reason]);
  }
}

export interface SmtpSettings {
  host: string;
  port: number;
  encryption: 'none' | 'ssl' | 'tls';
  username: string | null;
  password: string | null;
}

export interface SmtpOptions {
  resolver: Resolver;
  allowPrivateHosts: boolean;
  timeoutMs: number;
  /** extra trusted CA certificates (PEM); tests use it for a local server's certificate */
  ca?: string;
}

function smtpReason(err: unknown): DeliveryReason {
  const e = err as { code?: string; responseCode?: number; message?: string };
  if (e.code === 'EAUTH') return 'authentication_failed';
  if (e.code === 'ETIMEDOUT' || e.code === 'ETIMEOUT') return 'timeout';
  if (e.code === 'ETLS' || /certificate|self.signed|TLS|SSL|wrong version/i.test(e.message ?? '')) return 'tls_failed';
  if (e.code === 'EENVELOPE' || e.code === 'EMESSAGE' || (typeof e.responseCode === 'number' && e.responseCode >= 400)) return 'rejected';
  return 'connection_failed';
}

export function smtpMailer(settings: SmtpSettings, opts: SmtpOptions): Mailer {
  return {
    async send(email) {
      let address: string;
      try {
        ({ address } = await resolvePublicHost(settings.host, opts.resolver, { allowPrivate: opts.allowPrivateHosts }));
      } catch (err) {
        if (err instanceof HostRejected) throw new DeliveryError(err.reason === 'unresolvable' ? 'connection_failed' : 'host_not_allowed');
        throw err;
      }
      // loaded on the first send: a service that sends no email does not hold it (about 10 MiB)
      const { default: nodemailer } = await import('nodemailer');
      const transport = nodemailer.createTransport({
        host: address,
        port: settings.port,
        secure: settings.encryption === 'ssl',
        requireTLS: settings.encryption === 'tls',
        ignoreTLS: settings.encryption === 'none',
        auth: settings.username ? { user: settings.username, pass: settings.password ?? '' } : undefined,
        connectionTimeout: opts.timeoutMs,
        greetingTimeout: opts.timeoutMs,
        socketTimeout: opts.timeoutMs,
        tls: { servername: settings.host, rejectUnauthorized: true, minVersion: 'TLSv1.2', ...(opts.ca ? { ca: opts.ca } : {}) },
        logger: false,
        debug: false,
      });
      try {
        await transport.sendMail({ from: { name: email.from.name, address: email.from.address }, to: email.to, subject: email.subject, html: email.html, text: email.text });
      } catch (err) {
        throw new DeliveryError(smtpReason(err));
      } finally {
        transport.close();
      }
    },
  };
}

export interface EmailApiOptions {
  baseUrl: string;
  timeoutMs: number;
}

/** An RFC 5322 display name: plain words as they are, anything else quoted (specials cannot split the address list). */
export function displayName(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ').trim();
  if (/^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]*$/.test(clean)) return clean;
  return `"${clean.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** CONTRACT §7: POST {EMAILAPI_BASE_URL}/emails with a bearer key and a JSON message. */
export function emailApiMailer(apiKey: string, opts: EmailApiOptions): Mailer {
  return {
    async send(email) {
      // without a display name, the bare address (not " <addr>")
      const name = displayName(email.from.name);
      const from = name ? `${name} <${email.from.address}>` : email.from.address;
      let res: Response;
      try {
        res = await fetch(new URL('emails', opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`), {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ from, to: [email.to], subject: email.subject, html: email.html, text: email.text }),
          signal: AbortSignal.timeout(opts.timeoutMs),
          redirect: 'error',
        });
      } catch (err) {
        throw new DeliveryError((err as Error).name === 'TimeoutError' ? 'timeout' : 'connection_failed');
      }
      await res.body?.cancel().catch(() => undefined);
      if (res.status === 401 || res.status === 403) throw new DeliveryError('authentication_failed');
      if (!res.ok) throw new DeliveryError('provider_error');
    },
  };
}
