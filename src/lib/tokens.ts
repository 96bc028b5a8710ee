// Bearer secrets: 64 lower-case hex characters from the CSPRNG. Only their SHA-256 is stored;
// a 256-bit random secret needs no slow KDF, and a digest lookup leaks nothing useful by timing.
import * as crypto from 'node:crypto';
import { createHash, randomBytes } from 'node:crypto';

const TOKEN_RE = /^[0-9a-f]{64}$/;

export function newToken(): string {
  return randomBytes(32).toString('hex');
}

export function isTokenShaped(value: string): boolean {
  return TOKEN_RE.test(value);
}

// crypto.hash (Node.js 20.12+) digests in one call, at less than half the cost of a Hash object:
// every data-plane request hashes its key and its end-user token
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => createHash('sha256').update(text, 'utf8').digest('hex');

export function hashToken(token: string): string {
  return sha256Hex(token);
}

/** How rate-limit subjects (email and IP, account and IP, ...) are stored: a digest, never the raw values. */
export type SubjectDigest = (...parts: string[]) => string;

/**
 * The subject digest under `mac`, a keyed digest (SecretBox.mac): a leaked table cannot be tested
 * against guessed address pairs without the master key.
 */
export function subjectDigest(mac: (data: string) => string): SubjectDigest {
  return (...parts) => mac(parts.join('\u0000'));
}
