// One table: its rows (as any caller), its policies, the simulator and its columns.
import { api, seg } from '../../api/client.ts';
import type { Policy } from '../../api/types.ts';
import { Link } from '../../components/Link.tsx';
import { useLocation } from '../../lib/router.ts';
import { useLoad } from '../../lib/use-load.ts';
import { useTitle } from '../../lib/title.ts';
import { NotFound } from '../NotFound.tsx';
import { useProject } from '../project/context.ts';
import { DataBrowser } from './DataBrowser.tsx';
import { Policies } from './Policies.tsx';
import { Simulator } from './Simulator.tsx';
import { Columns } from './Columns.tsx';

const TABS = [
  ['data', 'Data'],
  ['policies', 'Policies'],
  ['simulator', 'Simulator'],
  ['columns', 'Columns'],
] as const;

export function TablePage({ tableId, tab }: { tableId: string; tab: string }) {
  const { project, base } = useProject();
  // the caller chosen on the data tab goes along to the simulator, and back
  const as = useLocation().query.get('as');
  const keep = (k: string) => (as && (k === 'data' || k === 'simulator') ? `?as=${encodeURIComponent(as)}` : '');
  const table = project.tables.find((t) => t.id === tableId);
  const label = TABS.find(([k]) => k === tab)?.[1];
  useTitle(`${table?.name ?? 'Table'}${label ? ` · ${label}` : ''} · ${project.name}`);
  // read again on every tab: the simulator and the no-policy warning must not show a stale list
  const policies = useLoad(() => api.get<Policy[]>(`/projects/${seg(project.id)}/tables/${seg(tableId)}/rls-policies`), [project.id, tableId, tab]);
  if (!table || !label) return <NotFound what="table" />;
  const tbase = `${base}/tables/${table.id}`;
  const enabled = policies.data?.filter((p) => p.enabled).length;
  return (
    <section class="page">
      <h1 tabIndex={-1}>
        <span class="muted">Table</span> <span class="mono">{table.name}</span>
      </h1>
      <nav class="tabs" aria-label="Table">
        {TABS.map(([k, l]) => (
          <Link key={k} href={`${tbase}/${k}${keep(k)}`} aria-current={k === tab ? 'page' : undefined}>
            {l}
            {k === 'policies' && policies.data ? ` (${policies.data.length})` : ''}
          </Link>
        ))}
      </nav>
      {enabled === 0 && tab !== 'policies' && (
        <p class="warn-box">
          No enabled policy: every end user with a key can read and write every row of this table.{' '}
          <Link href={`${tbase}/policies`}>Add a policy</Link>
        </p>
      )}
      {tab === 'data' && <DataBrowser table={table} />}
      {tab === 'policies' && <Policies table={table} policies={policies} />}
      {tab === 'simulator' && <Simulator table={table} />}
      {tab === 'columns' && <Columns table={table} />}
    </section>
  );
}
