// Who the owner acts as: the owner (every row, no policies), anonymous (policies with every $auth.*
// NULL) or one end user of the project (found by email).
import { useEffect, useId, useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { Caller, EndUser } from '../../api/types.ts';
import { Link } from '../../components/Link.tsx';

interface Props {
  projectId: string;
  value: Caller;
  onChange: (c: Caller) => void;
  allowOwner: boolean;
  label?: string;
  /** told the chosen end user's email once it is known */
  onEmail?: (email: string) => void;
}

export function userIdOf(c: Caller): number | null {
  return c.startsWith('end_user:') ? Number(c.slice('end_user:'.length)) : null;
}

function useEndUsers(projectId: string, search: string) {
  const [users, setUsers] = useState<EndUser[] | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      api
        .get<EndUser[]>(`/projects/${seg(projectId)}/end-users`, { query: { limit: 50, email: search || undefined }, signal: ctl.signal })
        .then(setUsers)
        .catch(() => undefined);
    }, 200);
    return () => (clearTimeout(timer), ctl.abort());
  }, [projectId, search]);
  return users;
}

export function CallerPicker({ projectId, value, onChange, allowOwner, label = 'View as', onEmail }: Props) {
  const id = useId();
  const [search, setSearch] = useState('');
  const users = useEndUsers(projectId, search);
  const uid = userIdOf(value);
  const email = users?.find((u) => u.id === uid)?.email;
  useEffect(() => void (email && onEmail?.(email)), [email]);
  const kind = uid !== null ? 'end_user' : value;
  const pickKind = (k: string) => {
    if (k !== 'end_user') return onChange(k as Caller);
    const first = users?.[0];
    if (first) onChange(`end_user:${first.id}`);
  };
  const listed = users ?? [];
  return (
    <fieldset class="caller-picker">
      <legend>{label}</legend>
      <div class="radios">
        {allowOwner && (
          <label>
            <input type="radio" name={`${id}-kind`} value="owner" checked={kind === 'owner'} onChange={() => pickKind('owner')} /> Owner <span class="muted small">(all rows, no policies)</span>
          </label>
        )}
        <label>
          <input type="radio" name={`${id}-kind`} value="anonymous" checked={kind === 'anonymous'} onChange={() => pickKind('anonymous')} /> Anonymous
        </label>
        <label>
          <input type="radio" name={`${id}-kind`} value="end_user" checked={kind === 'end_user'} disabled={listed.length === 0 && uid === null} onChange={() => pickKind('end_user')} /> End user
        </label>
      </div>
      {users && users.length === 0 && !search && uid === null && (
        <p class="small muted">
          No end users yet. <Link href={`/console/projects/${projectId}/end-users`}>Add one</Link> to see the table as them.
        </p>
      )}
      {(kind === 'end_user' || listed.length > 0) && (
        <div class="inline end-user-pick">
          <label for={`${id}-search`} class="visually-hidden">
            Find end users by email
          </label>
          <input id={`${id}-search`} type="search" placeholder="Find by email" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
          <label for={`${id}-user`} class="visually-hidden">
            Which end user
          </label>
          <select id={`${id}-user`} value={uid === null ? '' : String(uid)} onChange={(e) => e.currentTarget.value && onChange(`end_user:${Number(e.currentTarget.value)}`)}>
            {uid === null && <option value="">choose an end user…</option>}
            {uid !== null && !listed.some((u) => u.id === uid) && <option value={String(uid)}>end user #{uid}</option>}
            {listed.map((u) => (
              <option key={u.id} value={String(u.id)}>
                {u.email}
                {u.role ? ` (${u.role})` : ''}
              </option>
            ))}
          </select>
        </div>
      )}
    </fieldset>
  );
}
