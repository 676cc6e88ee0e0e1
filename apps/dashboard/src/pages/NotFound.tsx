import { Link } from 'wouter';
import { PageHeader } from '../components/States.tsx';
import { usePageTitle } from '../hooks.ts';

export function NotFoundPage() {
  usePageTitle('Page not found');
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no page at this address. <Link href="/keys">Go to API keys</Link>.
      </p>
    </>
  );
}
