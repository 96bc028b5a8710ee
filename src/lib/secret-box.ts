// Encryption at rest for per-project secrets (SMTP passwords, email API keys) under the server
// MASTER_KEY. Nothing here may put a plaintext, key or ciphertext into an error message or a log
// line: errors say what was expected, never what was received.
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { closeSync, constants, fchmodSync, fstatSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { makeDirs } from './make-dirs.ts';
import { join } from 'node:path';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Stored secrets are short; the cap keeps a hostile or corrupted column from costing a big decode.
const MAX_SEALED_CHARS = 64 * 1024;
const B64URL = /^[A-Za-z0-9_-]*$/;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const KEY_FILE = 'master.key';
const IS_WINDOWS = process.platform === 'win32';

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

/** Decodes base64url only if it is the canonical encoding, so each sealed string has one spelling. */
function strictB64url(text: string): Buffer | undefined {
  if (!B64URL.test(text)) return undefined;
  const buf = Buffer.from(text, 'base64url');
  return buf.toString('base64url') === text ? buf : undefined;
}

function checkContext(context: string): void {
  // An empty context would silently drop the project/field binding that makes copied ciphertexts fail.
  if (typeof context !== 'string' || context.length === 0) throw new TypeError('SecretBox context must be a non-empty string');
}

export class SecretBox {
  // A KeyObject in a private field: util.inspect, JSON.stringify and error dumps cannot reveal it.
  readonly #key: KeyObject;

  /** key: exactly 32 bytes (copied; later changes to the buffer have no effect). */
  constructor(key: Buffer) {
    if (!Buffer.isBuffer(key) || key.length !== 32) throw new TypeError('SecretBox key must be a 32-byte Buffer');
    this.#key = createSecretKey(Buffer.from(key));
  }

  /** AES-256-GCM with a fresh random 96-bit IV; `context` is bound as AAD. Returns `v1.<iv>.<ciphertext>.<tag>` (base64url). */
  seal(plaintext: string, context: string): string {
    if (typeof plaintext !== 'string') throw new TypeError('SecretBox plaintext must be a string');
    // Lone surrogates would be replaced during UTF-8 encoding, so open() would return a different string.
    if (/\p{Cs}/u.test(plaintext)) throw new TypeError('SecretBox plaintext must be well-formed Unicode');
    checkContext(context);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const sealed = [VERSION, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    // Refuse to produce something open() would reject.
    if (sealed.length > MAX_SEALED_CHARS) throw new SecretBoxError('secret is too large to seal');
    return sealed;
  }

  /**
   * A keyed digest for `context`: HMAC-SHA-256 (hex) under a key derived from the master key with
   * HKDF, so it is the same on every node sharing the master key, cannot be recomputed without it,
   * and reveals nothing about the master key or the keys of other contexts.
   */
  mac(context: string): (data: string) => string {
    checkContext(context);
    const key = createSecretKey(Buffer.from(hkdfSync('sha256', this.#key, Buffer.alloc(0), `baseplate mac: ${context}`, 32)));
    return (data) => createHmac('sha256', key).update(data, 'utf8').digest('hex');
  }

  /** Throws SecretBoxError on wrong key or context, tampering, bad format, unknown version or excessive length. */
  open(sealed: string, context: string): string {
    checkContext(context);
    if (typeof sealed !== 'string') throw new SecretBoxError('sealed secret must be a string');
    if (sealed.length > MAX_SEALED_CHARS) throw new SecretBoxError('sealed secret is too long');
    const parts = sealed.split('.');
    if (parts.length < 2) throw new SecretBoxError('sealed secret is malformed');
    if (parts[0] !== VERSION) throw new SecretBoxError('sealed secret has an unsupported version');
    if (parts.length !== 4) throw new SecretBoxError('sealed secret is malformed');
    const iv = strictB64url(parts[1]!);
    const body = strictB64url(parts[2]!);
    const tag = strictB64url(parts[3]!);
    if (!iv || !body || !tag || iv.length !== IV_BYTES) throw new SecretBoxError('sealed secret is malformed');
    // GCM accepts shorter tags, which would weaken forgery resistance; only the full 16 bytes are valid.
    if (tag.length !== TAG_BYTES) throw new SecretBoxError('sealed secret has an invalid authentication tag length');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      // No `cause`: the underlying error adds nothing an operator can act on.
      throw new SecretBoxError('cannot open sealed secret: wrong master key, wrong context, or altered data');
    }
  }
}

/** 64 hex chars, or base64/base64url (43 chars, optional single `=`) of exactly 32 bytes; surrounding whitespace is ignored. */
export function parseMasterKey(text: string): Buffer {
  const value = typeof text === 'string' ? text.trim() : '';
  if (HEX_KEY.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(value) || /^[A-Za-z0-9_-]{43}=?$/.test(value)) {
    const key = strictB64url(value.replace(/=$/, '').replace(/\+/g, '-').replace(/\//g, '_'));
    if (key && key.length === 32) return key;
  }
  throw new Error(
    `MASTER_KEY must be 32 bytes written as 64 hex characters or as base64/base64url (43 characters plus an optional '='); ` +
      `the given value (${value.length} characters after trimming) is neither. Generate one with: openssl rand -hex 32`,
  );
}

export interface MasterKeySource {
  key: Buffer;
  origin: 'env' | 'generated' | 'file';
}

function errCode(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? 'unknown error';
}

/** undefined when the file does not exist; throws when it exists but is unusable. */
function readKeyFile(file: string, warn: (msg: string) => void): Buffer | undefined {
  let fd: number;
  try {
    // O_NONBLOCK so a FIFO planted at the path cannot hang startup before the regular-file check.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw new Error(`cannot read master key file ${file} (${errCode(err)})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`master key file ${file} is not a regular file`);
    // Decision: tighten rather than refuse. A loose mode usually comes from a copy or restore, and
    // refusing to start would push operators towards deleting the file, i.e. losing every secret.
    if (!IS_WINDOWS && (st.mode & 0o077) !== 0) {
      try {
        fchmodSync(fd, 0o600);
      } catch (err) {
        throw new Error(`master key file ${file} is accessible to group/others and could not be changed to mode 0600 (${errCode(err)}); fix its permissions`);
      }
      warn(`master key file ${file} was accessible to group/others; its mode has been tightened to 0600`);
    }
    const text = st.size <= 1024 ? readFileSync(fd, 'utf8').trim() : '';
    if (!HEX_KEY.test(text)) {
      throw new Error(
        `master key file ${file} is corrupt: expected 64 hex characters (32 bytes). Restore it from backup ` +
          `(or set MASTER_KEY); replacing it with a new key makes stored email secrets unreadable`,
      );
    }
    return Buffer.from(text, 'hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a complete temp file, then link()s it into place: readers never see a partial key and an
 * existing key is never overwritten (link fails with EEXIST). Returns false when another process won.
 */
function publishKeyFile(dir: string, file: string, key: Buffer): boolean {
  const hex = `${key.toString('hex')}\n`;
  const tmp = join(dir, `.${KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      if (!IS_WINDOWS) fchmodSync(fd, 0o600); // an odd umask must not leave the owner unable to read it
      writeFileSync(fd, hex);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, file);
    } catch (err) {
      if (errCode(err) === 'EEXIST') return false;
      // Filesystems without hard links: fall back to an exclusive create, still never overwriting.
      try {
        writeFileSync(file, hex, { flag: 'wx', mode: 0o600 });
      } catch (err2) {
        if (errCode(err2) === 'EEXIST') return false;
        throw err2;
      }
    }
  } finally {
    rmSync(tmp, { force: true });
  }
  // Persist the directory entry too: a key lost in a crash would orphan every secret sealed with it.
  // Not possible everywhere (Windows); the file contents are already synced, so failure is ignored.
  try { const dfd = openSync(dir, 'r'); try { fsyncSync(dfd); } finally { closeSync(dfd); } } catch { /* best effort */ }
  return true;
}

/** Resolves the master key: MASTER_KEY, else (sqlite only) `<dataDir>/master.key`, else a newly generated one. */
export function loadMasterKey(opts: {
  env: string | undefined;
  engine: 'sqlite' | 'postgres';
  dataDir: string;
  warn: (msg: string) => void;
}): MasterKeySource {
  const { env, engine, dataDir, warn } = opts;
  if (env !== undefined && env.trim() !== '') return { key: parseMasterKey(env), origin: 'env' };
  if (engine !== 'sqlite') {
    // Nodes sharing one database cannot each invent a key, so there is no generated default.
    throw new Error('MASTER_KEY is required with PostgreSQL: set it to 32 random bytes as 64 hex characters (openssl rand -hex 32), the same on every node');
  }
  const file = join(dataDir, KEY_FILE);
  const existing = readKeyFile(file, warn);
  if (existing) return { key: existing, origin: 'file' };
  makeDirs(dataDir);
  const key = randomBytes(32);
  if (!publishKeyFile(dataDir, file, key)) {
    const winner = readKeyFile(file, warn);
    if (winner) return { key: winner, origin: 'file' };
    throw new Error(`master key file ${file} appeared and then vanished during startup`);
  }
  warn(
    `MASTER_KEY is not set: generated a new master key in ${file} (mode 0600). Back this file up; ` +
      `if it is lost, stored email secrets (SMTP passwords, API keys) become unreadable. ` +
      `Set MASTER_KEY to manage the key yourself.`,
  );
  return { key, origin: 'generated' };
}
