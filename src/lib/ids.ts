// Opaque ids for platform resources: 16 characters of lower-case base32 (80 random bits).
// Lower-case letters and digits only, so an id is URL-safe, usable inside a PostgreSQL schema
// name, and never equal to a top-level path word (those are shorter than 16 characters).
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const ID_RE = /^[a-z2-7]{16}$/;

export function newId(): string {
  const bytes = randomBytes(16);
  let out = '';
  for (let i = 0; i < 16; i++) out += ALPHABET[bytes[i]! & 31];
  return out;
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID_RE.test(value);
}
