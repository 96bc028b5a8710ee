import { Link } from '../components/Link.tsx';
import { useTitle } from '../lib/title.ts';

export function NotFound({ what = 'page' }: { what?: string }) {
  useTitle('Not found');
  return (
    <section class="page">
      <h1 tabIndex={-1}>Not found</h1>
      <p>This {what} does not exist, or it belongs to another account.</p>
      <p>
        <Link href="/console/projects">Back to your projects</Link>
      </p>
    </section>
  );
}
