// The owner's projects, and the first step for a new owner: creating one.
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { Project } from '../api/types.ts';
import { session } from '../api/session.ts';
import { Field, inputProps } from '../components/Field.tsx';
import { ErrorBox } from '../components/ErrorBox.tsx';
import { Link } from '../components/Link.tsx';
import { Pending } from '../components/States.tsx';
import { navigate } from '../lib/router.ts';
import { useAction, useLoad, submitWith } from '../lib/use-load.ts';
import { fieldError, formError } from '../lib/form-errors.ts';
import { useTitle } from '../lib/title.ts';
import { when } from '../lib/format.ts';
import { StepList } from './project/GettingStarted.tsx';

function CreateProject({ first }: { first: boolean }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const action = useAction(async () => {
    const p = await api.post<Project>('/projects', { name, description: description.trim() === '' ? null : description });
    navigate(`/console/projects/${p.id}`);
  });
  return (
    <form
      class="card"
      aria-labelledby="new-project-title"
      onSubmit={submitWith(action.run)}
    >
      <h2 id="new-project-title">{first ? 'Create your first project' : 'New project'}</h2>
      <div class="row-fields">
        <Field id="project-name" label="Project name" error={fieldError(action.error, 'name')}>
          <input {...inputProps('project-name', fieldError(action.error, 'name'))} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="My app" />
        </Field>
        <Field id="project-description" label="Description (optional)" error={fieldError(action.error, 'description')}>
          <input {...inputProps('project-description', fieldError(action.error, 'description'))} maxLength={1000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
      </div>
      <ErrorBox error={formError(action.error, ['name', 'description'])} />
      <button type="submit" class="primary" disabled={action.busy}>
        {action.busy ? 'Creating…' : 'Create project'}
      </button>
    </form>
  );
}

export function Projects() {
  useTitle('Projects');
  const projects = useLoad(() => api.get<Project[]>('/projects'), []);
  const list = projects.data;
  return (
    <section class="page">
      <h1 tabIndex={-1}>Projects</h1>
      {!list ? (
        <Pending error={projects.error} retry={projects.reload} />
      ) : list.length === 0 ? (
        <div class="welcome">
          <p class="lead">Welcome, {session()?.account.name}. A project holds tables, their access rules, end users, API keys and functions.</p>
          <StepList current={0} />
          <CreateProject first />
        </div>
      ) : (
        <>
          <ul class="project-list">
            {list.map((p) => (
              <li key={p.id} class="card">
                <Link href={`/console/projects/${p.id}`} class="project-link">
                  {p.name}
                </Link>
                <p class="muted">{p.description || 'No description'}</p>
                <p class="small muted">
                  Created {when(p.created_at)} · <span class="mono">{p.id}</span>
                </p>
              </li>
            ))}
          </ul>
          <CreateProject first={false} />
        </>
      )}
    </section>
  );
}
