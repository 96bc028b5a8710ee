// Sign in and sign up: the only screens without a session.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { startSession } from '../api/session.ts';
import type { Session } from '../api/types.ts';
import { Field, inputProps } from '../components/Field.tsx';
import { ErrorBox } from '../components/ErrorBox.tsx';
import { Link } from '../components/Link.tsx';
import { navigate, useLocation } from '../lib/router.ts';
import { useAction, submitWith } from '../lib/use-load.ts';
import { useTitle } from '../lib/title.ts';
import { fieldError, formError } from '../lib/form-errors.ts';

function AuthCard({ title, children }: { title: string; children: ComponentChildren }) {
  useTitle(title);
  return (
    <main id="main" class="auth-screen">
      <div class="auth-card">
        <p class="brand-line">
          <img src="/console/favicon.svg" alt="" width={28} height={28} /> Baseplate
        </p>
        <h1 tabIndex={-1}>{title}</h1>
        {children}
      </div>
      <p class="auth-aside muted">
        Projects, tables, row-level security, end users, email and functions: one self-hosted service. The API is documented at{' '}
        <a href="/docs">/docs</a>.
      </p>
    </main>
  );
}

/** Where to go after signing in: a console path the sign-in screen was sent from, else the projects. */
function nextPath(query: URLSearchParams): string {
  const next = query.get('next') ?? '';
  return next.startsWith('/console/') && !next.startsWith('//') ? next : '/console/projects';
}

export function SignIn({ reason }: { reason?: string }) {
  const loc = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    const s = await api.post<Session>('/auth/login', { email, password }, { auth: false });
    startSession(s);
    navigate(nextPath(loc.query), { replace: true });
  });
  return (
    <AuthCard title="Sign in">
      {reason && (
        <p class="info-box" role="status">
          {reason}
        </p>
      )}
      <form onSubmit={submitWith(action.run)}>
        <Field id="signin-email" label="Email">
          <input {...inputProps('signin-email')} type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field id="signin-password" label="Password">
          <input {...inputProps('signin-password')} type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
        <ErrorBox error={action.error} />
        <button type="submit" class="primary wide" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p>
        New here? <Link href="/console/sign-up">Create an account</Link>
      </p>
    </AuthCard>
  );
}

export function SignUp() {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    const s = await api.post<Session>('/auth/register', { name, email, password }, { auth: false });
    startSession(s);
    navigate('/console/projects', { replace: true });
  });
  const err = (f: string) => fieldError(action.error, f);
  return (
    <AuthCard title="Create your account">
      <form onSubmit={submitWith(action.run)}>
        <Field id="signup-name" label="Your name" error={err('name')}>
          <input {...inputProps('signup-name', err('name'))} autocomplete="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field id="signup-email" label="Email" error={err('email')}>
          <input {...inputProps('signup-email', err('email'))} type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field id="signup-password" label="Password" error={err('password')} hint="8 to 1024 characters.">
          <input
            {...inputProps('signup-password', err('password'), true)}
            type="password"
            autocomplete="new-password"
            required
            minLength={8}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <ErrorBox error={formError(action.error, ['name', 'email', 'password'])} />
        <button type="submit" class="primary wide" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create account'}
        </button>
      </form>
      <p>
        Already have an account? <Link href="/console/sign-in">Sign in</Link>
      </p>
    </AuthCard>
  );
}
