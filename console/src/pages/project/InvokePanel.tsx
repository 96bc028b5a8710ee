// A test request to a deployed function, as anonymous or as an end user signed in here, with a
// short-lived key of the console's own (lib/test-keys.ts). Shows status, headers, body, duration.
import { useState } from 'preact/hooks';
import { api, seg, ApiError } from '../../api/client.ts';
import type { EndUser } from '../../api/types.ts';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { testKey } from '../../lib/test-keys.ts';
import { useProject } from './context.ts';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface Outcome {
  status: number;
  statusText: string;
  ms: number;
  headers: [string, string][];
  body: string;
}

/** An end user's session held only in this panel's memory (signing in as them needs their password). */
function EndUserLogin({ onToken }: { onToken: (t: { token: string; user: EndUser } | null) => void }) {
  const { project } = useProject();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useAction(async () => {
    const s = await api.post<{ token: string; user: EndUser }>(`/${seg(project.id)}/auth/login`, { email, password }, { auth: false });
    setPassword('');
    onToken(s);
  });
  return (
    <div class="row-fields">
      <Field id="inv-email" label="End user email">
        <input {...inputProps('inv-email')} type="email" autocomplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </Field>
      <Field id="inv-password" label="Their password">
        <input {...inputProps('inv-password')} type="password" autocomplete="off" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </Field>
      <button type="button" class="secondary" disabled={login.busy || !email || !password} onClick={() => void login.run()}>
        Sign in as them
      </button>
      <ErrorBox error={login.error} />
    </div>
  );
}

async function invoke(url: string, method: string, key: string, userToken: string | null, body: string): Promise<Outcome> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (userToken) headers['x-user-token'] = userToken;
  const sendsBody = method !== 'GET' && body.trim() !== '';
  if (sendsBody) headers['content-type'] = 'application/json';
  const started = performance.now();
  const res = await fetch(url, { method, headers, body: sendsBody ? body : undefined });
  const text = await res.text();
  const ms = performance.now() - started;
  let shown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) {
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // shown as sent
    }
  }
  return { status: res.status, statusText: res.statusText, ms, headers: [...res.headers.entries()], body: shown };
}

function OutcomeView({ outcome }: { outcome: Outcome }) {
  return (
    <div class="outcome" aria-live="polite">
      <p>
        <span class={`status s${Math.floor(outcome.status / 100)}xx`}>
          {outcome.status} {outcome.statusText}
        </span>{' '}
        <span class="muted small">in {outcome.ms.toFixed(0)} ms</span>
      </p>
      <details>
        <summary>Headers ({outcome.headers.length})</summary>
        <dl class="headers">
          {outcome.headers.map(([k, v]) => (
            <div key={k}>
              <dt class="mono">{k}</dt>
              <dd class="mono">{v}</dd>
            </div>
          ))}
        </dl>
      </details>
      <pre class="snippet response-body" aria-label="Response body">
        {outcome.body || '(empty body)'}
      </pre>
    </div>
  );
}

type UserSession = { token: string; user: EndUser } | null;

/** Anonymous, or an end user signed in here; "Forget" signs them out. */
function CallerChoice({ asUser, setAsUser, user, setUser }: { asUser: boolean; setAsUser: (b: boolean) => void; user: UserSession; setUser: (u: UserSession) => void }) {
  const { project } = useProject();
  const forget = (token: string) => {
    setUser(null);
    void api.post(`/${seg(project.id)}/auth/logout`, undefined, { auth: false, headers: { 'x-user-token': token } }).catch(() => undefined);
  };
  return (
    <fieldset>
      <legend>Caller</legend>
      <div class="radios">
        <label>
          <input type="radio" name="inv-caller" checked={!asUser} onChange={() => setAsUser(false)} /> Anonymous
        </label>
        <label>
          <input type="radio" name="inv-caller" checked={asUser} onChange={() => setAsUser(true)} /> An end user
        </label>
      </div>
      {asUser &&
        (user ? (
          <p class="small">
            Signed in as <strong>{user.user.email}</strong>{' '}
            <button type="button" class="ghost small-button" onClick={() => forget(user.token)}>
              Forget
            </button>
          </p>
        ) : (
          <EndUserLogin onToken={setUser} />
        ))}
    </fieldset>
  );
}

export function InvokePanel({ name }: { name: string }) {
  const { project } = useProject();
  const [method, setMethod] = useState('POST');
  const [subPath, setSubPath] = useState('');
  const [body, setBody] = useState('{\n  "name": "Ada"\n}');
  const [asUser, setAsUser] = useState(false);
  const [user, setUser] = useState<UserSession>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const send = useAction(async () => {
    if (method !== 'GET' && body.trim()) {
      try {
        JSON.parse(body);
      } catch (e) {
        throw new ApiError(0, 'invalid_json', `The body is not valid JSON: ${(e as Error).message}`, null, null, null);
      }
    }
    const key = await testKey(project.id);
    const path = subPath.replace(/^\/+/, '');
    const url = `/${seg(project.id)}/functions/${seg(name)}${path ? `/${path}` : ''}`;
    setOutcome(await invoke(url, method, key, asUser ? (user?.token ?? null) : null, body));
  });
  return (
    <section class="card invoke" aria-labelledby="invoke-title">
      <h2 id="invoke-title">Test request</h2>
      <p class="small muted">Sent with a console test key (permission function, valid 15 minutes, listed under API keys and revoked when you sign out).</p>
      <form onSubmit={submitWith(send.run)}>
        <div class="row-fields">
          <Field id="inv-method" label="Method">
            <select {...inputProps('inv-method')} value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
              {METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </Field>
          <Field id="inv-path" label="Sub-path (optional)" class="grow">
            <input {...inputProps('inv-path')} class="mono" value={subPath} placeholder="items/42?x=1" onInput={(e) => setSubPath(e.currentTarget.value)} />
          </Field>
        </div>
        {method !== 'GET' && (
          <Field id="inv-body" label="JSON body">
            <textarea {...inputProps('inv-body')} class="code" rows={4} spellcheck={false} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
          </Field>
        )}
        <CallerChoice asUser={asUser} setAsUser={setAsUser} user={user} setUser={setUser} />
        <ErrorBox error={send.error} />
        <button type="submit" class="primary" disabled={send.busy || (asUser && !user)}>
          {send.busy ? 'Sending…' : 'Send request'}
        </button>
      </form>
      {outcome && <OutcomeView outcome={outcome} />}
    </section>
  );
}
