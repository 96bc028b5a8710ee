// A project's first screen: the getting-started steps with their state, and how an app connects.
import { api, call, seg } from '../../api/client.ts';
import type { EndUser, Policy, Table } from '../../api/types.ts';
import { CopyButton } from '../../components/CopyButton.tsx';
import { useLoad } from '../../lib/use-load.ts';
import { useTitle } from '../../lib/title.ts';
import { useProject } from './context.ts';
import { StepList, STEP_TEXT, type Step } from './GettingStarted.tsx';

interface Progress {
  policyTable: Table | undefined;
  user: EndUser | undefined;
  rows: number;
}

async function progress(pid: string, tables: Table[]): Promise<Progress> {
  const p = `/projects/${seg(pid)}`;
  const [users, policies] = await Promise.all([
    api.get<EndUser[]>(`${p}/end-users`, { query: { limit: 1 } }),
    Promise.all(tables.slice(0, 20).map((t) => api.get<Policy[]>(`${p}/tables/${seg(t.id)}/rls-policies`))),
  ]);
  const policyTable = tables.find((_, i) => (policies[i]?.length ?? 0) > 0);
  const target = policyTable ?? tables[0];
  let rows = 0;
  if (target) {
    const head = await call<void>('HEAD', `${p}/tables/${seg(target.id)}/rows`, { headers: { prefer: 'count=exact' } }).catch(() => null);
    rows = Number(head?.headers.get('content-range')?.split('/')[1] ?? 0) || 0;
  }
  return { policyTable, user: users[0], rows };
}

function steps(base: string, tables: Table[], pr: Progress | undefined): Step[] {
  const table = pr?.policyTable ?? tables[0];
  const tbase = table ? `${base}/tables/${table.id}` : `${base}/tables/new`;
  const as = pr?.user ? `?as=end_user:${pr.user.id}` : '';
  const done = [true, tables.length > 0, !!pr?.policyTable, !!pr?.user, (pr?.rows ?? 0) > 0, false];
  const actions = [
    undefined,
    { href: `${base}/tables/new`, label: 'Create a table' },
    { href: `${tbase}/policies`, label: 'Add a policy' },
    { href: `${base}/end-users`, label: 'Add an end user' },
    { href: `${tbase}/data${as}`, label: 'Add rows' },
    { href: `${tbase}/data${as}`, label: pr?.user ? `Browse as ${pr.user.email}` : 'Browse as an end user' },
  ];
  return STEP_TEXT.map((s, i) => ({ ...s, done: done[i]!, action: actions[i] }));
}

export function Overview() {
  const { project, base } = useProject();
  useTitle(project.name);
  const pr = useLoad(() => progress(project.id, project.tables), [project.id, project.tables]);
  const origin = window.location.origin;
  return (
    <section class="page">
      <h1 tabIndex={-1}>{project.name}</h1>
      {project.description && <p class="muted">{project.description}</p>}
      <div class="two-col">
        <div class="card">
          <h2>Getting started</h2>
          <StepList steps={steps(base, project.tables, pr.data)} />
        </div>
        <div class="card">
          <h2>Connect an app</h2>
          <p class="small">
            Project id <code>{project.id}</code>
          </p>
          <p class="small">REST (PostgREST dialect), with an API key and an end user's token:</p>
          <div class="copy-line">
            <code id="rest-url">{`${origin}/${project.id}/rest/{table}`}</code>
          </div>
          <p class="small">supabase-js:</p>
          <pre class="snippet">{`createClient('${origin}/${project.id}', API_KEY)`}</pre>
          <CopyButton text={`createClient('${origin}/${project.id}', API_KEY)`} label="Copy snippet" />
        </div>
      </div>
    </section>
  );
}
