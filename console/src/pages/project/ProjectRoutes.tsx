// Everything below /console/projects/{id}: the project is loaded once, its screens share it.
import { api, seg } from '../../api/client.ts';
import type { ProjectWithTables } from '../../api/types.ts';
import { Link } from '../../components/Link.tsx';
import { Pending } from '../../components/States.tsx';
import { useLocation } from '../../lib/router.ts';
import { useLoad } from '../../lib/use-load.ts';
import { NotFound } from '../NotFound.tsx';
import { ProjectContext } from './context.ts';
import { Overview } from './Overview.tsx';
import { Tables, NewTable } from './Tables.tsx';
import { TablePage } from '../table/TablePage.tsx';
import { EndUsers } from './EndUsers.tsx';
import { Keys } from './Keys.tsx';
import { Functions } from './Functions.tsx';
import { FunctionPage } from './FunctionPage.tsx';
import { AuthEmail } from './AuthEmail.tsx';
import { Templates } from './Templates.tsx';
import { ProjectSettings } from './ProjectSettings.tsx';

function Screen({ rest }: { rest: string[] }) {
  const [a, b, c] = rest;
  if (a === undefined) return <Overview />;
  if (a === 'tables' && b === undefined) return <Tables />;
  if (a === 'tables' && b === 'new') return <NewTable />;
  if (a === 'tables' && b && rest.length <= 3) return <TablePage tableId={b} tab={c ?? 'data'} />;
  if (a === 'end-users' && !b) return <EndUsers />;
  if (a === 'keys' && !b) return <Keys />;
  if (a === 'functions' && !b) return <Functions />;
  if (a === 'functions' && b && !c) return <FunctionPage name={b} />;
  if (a === 'auth' && !b) return <AuthEmail />;
  if (a === 'templates' && !b) return <Templates />;
  if (a === 'settings' && !b) return <ProjectSettings />;
  return <NotFound />;
}

function ProjectNav({ project, base, path }: { project: ProjectWithTables; base: string; path: string }) {
  const item = (href: string, label: string, exact = false) => {
    const active = exact ? path === href : path === href || path.startsWith(`${href}/`);
    return (
      <li>
        <Link href={href} aria-current={active ? 'page' : undefined}>
          {label}
        </Link>
      </li>
    );
  };
  return (
    <nav class="project-nav" aria-label="Project">
      <p class="project-name" title={project.name}>
        {project.name}
      </p>
      <ul>
        {item(base, 'Getting started', true)}
        {item(`${base}/tables`, 'Tables', true)}
        {project.tables.map((t) => (
          <li key={t.id} class="sub">
            <Link href={`${base}/tables/${t.id}`} aria-current={path.startsWith(`${base}/tables/${t.id}`) ? 'page' : undefined}>
              {t.name}
            </Link>
          </li>
        ))}
        {item(`${base}/end-users`, 'End users')}
        {item(`${base}/keys`, 'API keys')}
        {item(`${base}/functions`, 'Functions')}
        {item(`${base}/auth`, 'Auth & email')}
        {item(`${base}/templates`, 'Email templates')}
        {item(`${base}/settings`, 'Settings')}
      </ul>
    </nav>
  );
}

export function ProjectRoutes({ pid, rest }: { pid: string; rest: string[] }) {
  const loc = useLocation();
  const project = useLoad(() => api.get<ProjectWithTables>(`/projects/${seg(pid)}`), [pid]);
  if (project.error?.status === 404) return <NotFound what="project" />;
  if (!project.data) return <Pending error={project.error} retry={project.reload} />;
  const base = `/console/projects/${pid}`;
  return (
    <ProjectContext.Provider value={{ project: project.data, reload: project.reload, base }}>
      <div class="project-layout">
        <ProjectNav project={project.data} base={base} path={loc.path} />
        <div class="project-main">
          <Screen rest={rest} />
        </div>
      </div>
    </ProjectContext.Provider>
  );
}
