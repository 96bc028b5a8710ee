// Password hashing with argon2id. Verification of an unknown account runs against a fixed dummy
// hash so that "no such email" and "wrong password" take similar time.
import { hash, verify, Algorithm } from '@node-rs/argon2';

/** `tenant`: whose work a hash is (a project's id, or the owners' accounts: services/password-share.ts). */
export interface PasswordHasher {
  hash(password: string, tenant: string): Promise<string>;
  verify(hash: string | null, password: string, tenant: string): Promise<boolean>;
}

export interface Argon2Options {
  memoryCost: number; // KiB
  timeCost: number;
}

export function argon2Hasher(opts: Argon2Options): PasswordHasher {
  const params = { algorithm: Algorithm.Argon2id, memoryCost: opts.memoryCost, timeCost: opts.timeCost, parallelism: 1 };
  let dummy: Promise<string> | undefined;
  return {
    hash: (password) => hash(password, params),
    async verify(stored, password) {
      if (stored === null) {
        dummy ??= hash('dummy-password-for-timing', params);
        await verify(await dummy, password).catch(() => false);
        return false;
      }
      try {
        return await verify(stored, password);
      } catch {
        return false;
      }
    },
  };
}
