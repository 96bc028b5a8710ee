// Invoking a function needs an API key with the `function` permission. The console makes one per
// project on the first test invocation: permission `function` only, valid for 15 minutes, named
// "Console test key" so it shows (and can be revoked) on the keys screen. Its plaintext lives only
// in this module's memory: never in storage, the URL or the DOM. It is replaced before it expires
// and revoked on sign-out.
import { api, seg } from '../api/client.ts';
import type { NewApiKey } from '../api/types.ts';

const LIFETIME_MS = 15 * 60_000;
const MARGIN_MS = 60_000;
const keys = new Map<string, { key: string; keyId: string; expires: number }>();

export const TEST_KEY_NAME = 'Console test key';

export async function testKey(projectId: string): Promise<string> {
  const held = keys.get(projectId);
  if (held && held.expires - MARGIN_MS > Date.now()) return held.key;
  const expires = Date.now() + LIFETIME_MS;
  const created = await api.post<NewApiKey>(`/projects/${seg(projectId)}/keys`, {
    name: TEST_KEY_NAME,
    permissions: ['function'],
    expires_at: new Date(expires).toISOString(),
  });
  keys.set(projectId, { key: created.key, keyId: created.key_id, expires });
  if (held) void api.del(`/projects/${seg(projectId)}/keys/${seg(held.keyId)}`).catch(() => undefined);
  return created.key;
}

/** Forgets a key the owner revoked on the keys screen. */
export function forgetTestKey(projectId: string, keyId: string): void {
  if (keys.get(projectId)?.keyId === keyId) keys.delete(projectId);
}

export async function revokeTestKeys(): Promise<void> {
  const all = [...keys.entries()];
  keys.clear();
  await Promise.all(all.map(([pid, k]) => api.del(`/projects/${seg(pid)}/keys/${seg(k.keyId)}`).catch(() => undefined)));
}
