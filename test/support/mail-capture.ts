// Real peers for the email tests: an in-process SMTP server (smtp-server) that keeps every message
// it accepts, and an HTTP server standing in for the emailapi provider. Both listen on 127.0.0.1.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { smtpMailer } from '../../src/email/mailer.ts';
import type { MailerFactory } from '../../src/services/email-config.ts';

export interface CapturedMail {
  from: string;
  to: string[];
  subject: string;
  html: string;
  text: string;
  raw: string;
}

export interface SmtpCapture {
  port: number;
  messages: CapturedMail[];
  close(): Promise<void>;
}

/** decodes RFC 2047 encoded words (=?utf-8?Q?...?= / =?utf-8?B?...?=) */
function decodeWords(s: string): string {
  return s.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_m, _cs, enc: string, data: string) =>
    enc.toUpperCase() === 'B' ? Buffer.from(data, 'base64').toString('utf8') : decodeQp(data.replace(/_/g, ' ')),
  );
}

function decodeQp(s: string): string {
  const bytes: number[] = [];
  const text = s.replace(/=\r?\n/g, '');
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(text[i]!, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

function headersOf(block: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return out;
}

/** A small MIME reader for what nodemailer writes: one text/html alternative pair. */
export function parseMail(raw: string): { subject: string; html: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = headersOf(raw.slice(0, split));
  const result = { subject: decodeWords(head.get('subject') ?? ''), html: '', text: '' };
  const visit = (headers: Map<string, string>, body: string) => {
    const type = headers.get('content-type') ?? 'text/plain';
    const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
    if (boundary) {
      for (const part of body.split(`--${boundary}`).slice(1)) {
        if (part.startsWith('--')) break;
        const cut = part.indexOf('\r\n\r\n');
        visit(headersOf(part.slice(0, cut)), part.slice(cut + 4));
      }
      return;
    }
    const enc = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
    const decoded = enc === 'base64' ? Buffer.from(body, 'base64').toString('utf8') : enc === 'quoted-printable' ? decodeQp(body) : body;
    if (type.startsWith('text/html')) result.html = decoded.trim();
    else if (type.startsWith('text/plain')) result.text = decoded.trim();
  };
  visit(head, raw.slice(split + 4));
  return result;
}

export async function startSmtpCapture(opts: { tls?: { key: string; cert: string }; auth?: { user: string; pass: string } } = {}): Promise<SmtpCapture> {
  const messages: CapturedMail[] = [];
  const server = new SMTPServer({
    secure: false,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    disabledCommands: [...(opts.tls ? [] : ['STARTTLS']), ...(opts.auth ? [] : ['AUTH'])],
    authOptional: !opts.auth,
    // AUTH over a plain connection is what the service's 'none' encryption does: allowed in tests
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username });
      cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          ...parseMail(raw),
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, messages, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export interface ApiRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface ApiCapture {
  baseUrl: string;
  requests: ApiRequest[];
  /** the status the next requests get (default 200) */
  status: number;
  close(): Promise<void>;
}

export async function startApiCapture(): Promise<ApiCapture> {
  const capture: ApiCapture = { baseUrl: '', requests: [], status: 200, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = Buffer.concat(chunks).toString('utf8');
      }
      capture.requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body });
      res.writeHead(capture.status, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `msg_${capture.requests.length}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  capture.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  capture.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return capture;
}

/**
 * Mailers that deliver a project's SMTP settings to the capture server `smtp()` (read when a mail is
 * sent: suites start it in before()): settings must name an allowed port, the capture listens on a
 * free one. The emailapi provider sends nothing.
 */
export function captureMailers(smtp: () => SmtpCapture): MailerFactory {
  return {
    smtp: (s) => smtpMailer({ ...s, port: smtp().port }, { resolver: { lookup: async () => ['127.0.0.1'] }, allowPrivateHosts: true, timeoutMs: 5000 }),
    emailapi: () => ({ send: async () => undefined }),
  };
}
