import type { ComponentChildren } from 'preact';
import type { Account } from '../api/types.ts';
import { api } from '../api/client.ts';
import { endSession } from '../api/session.ts';
import { revokeTestKeys } from '../lib/test-keys.ts';
import { Link } from './Link.tsx';
import { navigate } from '../lib/router.ts';

async function signOut(): Promise<void> {
  // best effort: the token is forgotten here whatever the server answers
  await revokeTestKeys().catch(() => undefined);
  await api.post('/auth/logout').catch(() => undefined);
  endSession();
  navigate('/console/sign-in'); // a chosen sign-out comes back to no page in particular
}

export function Shell({ account, children }: { account: Account; children: ComponentChildren }) {
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/console/projects" class="brand">
          <img src="/console/favicon.svg" alt="" width={22} height={22} />
          Baseplate
        </Link>
        <nav aria-label="Account">
          <Link href="/console/projects">Projects</Link>
          <a href="/docs" target="_blank" rel="noopener">
            API docs
          </a>
          <Link href="/console/account" title={account.email}>
            {account.name}
          </Link>
          <button type="button" class="ghost" onClick={() => void signOut()}>
            Sign out
          </button>
        </nav>
      </header>
      <main id="main">{children}</main>
    </>
  );
}
