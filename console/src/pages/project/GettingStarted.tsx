// The path from nothing to "rows seen as an end user": one list of steps, each with what it is for,
// whether it is done, and a link that does it.
import type { ComponentChildren } from 'preact';
import { Link } from '../../components/Link.tsx';

export interface Step {
  title: string;
  why: ComponentChildren;
  done: boolean;
  action?: { href: string; label: string };
}

const GENERIC: Step[] = [
  { title: 'Create a project', why: 'Its own tables, users, keys and functions, apart from your other projects.', done: false },
  { title: 'Create a table', why: 'Columns with types; every row gets an integer id.', done: false },
  { title: 'Add a policy', why: 'A rule such as owner_id = $auth.id that decides which rows each end user may read and write.', done: false },
  { title: 'Add an end user', why: 'An account of your app; policies see it as $auth.id, $auth.email and $auth.role.', done: false },
  { title: 'Add rows', why: 'As the owner (no policies apply) or as an end user (the policies decide).', done: false },
  { title: 'See the rows as that end user', why: 'Browse the table exactly as the user would, and ask the simulator why a row is hidden.', done: false },
];

export function StepList({ steps, current }: { steps?: Step[]; current?: number }) {
  const list = steps ?? GENERIC.map((s, i) => ({ ...s, done: i < (current ?? 0) }));
  const next = list.findIndex((s) => !s.done);
  return (
    <ol class="steps">
      {list.map((s, i) => (
        <li key={s.title} class={s.done ? 'done' : i === next ? 'next' : ''} aria-current={i === next ? 'step' : undefined}>
          <span class="step-mark" aria-hidden="true">
            {s.done ? '✓' : i + 1}
          </span>
          <div>
            <p class="step-title">
              {s.title}
              {s.done && <span class="visually-hidden"> (done)</span>}
            </p>
            <p class="muted small">{s.why}</p>
            {s.action && !s.done && i === next && (
              <Link href={s.action.href} class="button primary small-button">
                {s.action.label}
              </Link>
            )}
          </div>
        </li>
      ))}
    </ol>
  );
}

export const STEP_TEXT = GENERIC;
