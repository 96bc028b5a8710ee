// The owner console (console/, built into dist/console/ by the install step): a single-page app
// served at / and /console/*. Its files (about 150 KB) are read once at start-up, with an ETag;
// each is gzipped on its first gzip request. Hashed files under assets/ are cached for a year; index.html and the rest are revalidated
// (no-cache), so a deployment is picked up on the next load. Unknown /console paths are the app's
// own routes (index.html), except under assets/, where a missing file is a 404 rather than HTML.
// Every answer carries a strict security header set: the app runs under a CSP of its own files.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';

interface ConsoleFile {
  body: Buffer;
  /** compressed on its first gzip request (undefined until then; null: not worth it) */
  gzip?: Buffer | null;
  type: string;
  etag: string;
  immutable: boolean;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

// Only the console's own files; style attributes are allowed (not <style> elements), because the
// email template preview renders the owner's HTML, whose inline styles are the norm in email, in a
// sandboxed srcdoc frame that inherits this policy. Nothing of the app sets inline styles or scripts.
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

/** The built console's files by URL path below /console/ (e.g. `assets/index-3f2a.js`). */
export function loadConsoleFiles(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  if (!existsSync(join(dir, 'index.html'))) return files;
  for (const path of walk(dir)) {
    const type = TYPES[extname(path)];
    if (!type) continue; // the build stamp and anything unknown are not served
    const rel = relative(dir, path).split(sep).join('/');
    const body = readFileSync(path);
    files.set(rel, {
      body,
      type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: rel.startsWith('assets/'),
    });
  }
  return files;
}

function send(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile): FastifyReply {
  reply.headers(SECURITY_HEADERS);
  reply.header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  reply.header('etag', file.etag);
  reply.header('vary', 'accept-encoding');
  reply.type(file.type);
  if (request.headers['if-none-match'] === file.etag) return reply.status(304).send();
  const zipped = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? '')) ? gzipOf(file) : null;
  if (zipped) reply.header('content-encoding', 'gzip');
  return reply.send(zipped ?? file.body);
}

function gzipOf(file: ConsoleFile): Buffer | null {
  if (file.gzip === undefined) {
    const zipped = file.body.length > 512 && file.type !== 'image/png' ? gzipSync(file.body, { level: 9 }) : null;
    file.gzip = zipped && zipped.length < file.body.length ? zipped : null;
  }
  return file.gzip;
}

export function consoleRoutes(app: FastifyInstance, dir: string): void {
  const files = loadConsoleFiles(dir);
  const schema = { hide: true };
  const page = async (request: FastifyRequest, reply: FastifyReply, path: string) => {
    const index = files.get('index.html');
    if (!index) throw new AppError('not_found.console');
    const file = files.get(path);
    if (file && path !== '') return send(request, reply, file);
    if (path.startsWith('assets/')) throw new AppError('not_found.console_file');
    return send(request, reply, index);
  };
  app.get('/', { schema }, (req, reply) => page(req, reply, ''));
  app.get('/console', { schema }, (req, reply) => page(req, reply, ''));
  app.get<{ Params: { '*': string } }>('/console/*', { schema }, (req, reply) => page(req, reply, req.params['*']));
}
