// Bearer secrets: 64 lower-case hex characters from the CSPRNG. Only their SHA-256 is stored;
// a 256-bit random secret needs no slow KDF, and a digest lookup leaks nothing useful by timing.
import { createHash, randomBytes } from 'node:crypto';

const TOKEN_RE = /^[0-9a-f]{64}$/;

export function newToken(): string {
  return randomBytes(32).toString('hex');
}

export function isTokenShaped(value: string): boolean {
  return TOKEN_RE.test(value);
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
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
