import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Fragment, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { queries } from '../api.ts';
import { authCall, authClient, authErrorMessage } from '../auth.ts';
import { MeContext, useRequest } from '../hooks.ts';
import { isSignedOut } from '../session.ts';
import { QuotaBanner } from './QuotaBanner.tsx';
import { ErrorState, Loading } from './States.tsx';

function NavLink({ href, children }: { href: string; children: ReactNode }) {
  const [location] = useLocation();
  const active = location === href || location.startsWith(`${href}/`);
  return (
    <Link
      href={href}
      className={active ? 'nav-link active' : 'nav-link'}
      aria-current={active ? 'page' : undefined}
    >
      {children}
    </Link>
  );
}

/** The pages of the navigation, in its groups; each group's heading names its list. */
const NAV = [
  {
    id: 'nav-developer',
    group: 'Developer',
    links: [
      { href: '/keys', label: 'API keys' },
      { href: '/usage', label: 'Usage' },
      { href: '/webhooks', label: 'Webhooks' },
    ],
  },
  {
    id: 'nav-settings',
    group: 'Settings',
    links: [
      { href: '/fields', label: 'Fields' },
      { href: '/team', label: 'Team' },
      { href: '/audit', label: 'Audit log' },
      { href: '/account', label: 'Account' },
    ],
  },
];

function Nav() {
  return (
    <nav className="sidebar" aria-label="Main">
      {NAV.map(({ id, group, links }) => (
        <Fragment key={id}>
          <p className="nav-group" id={id}>
            {group}
          </p>
          <ul className="nav-list" aria-labelledby={id}>
            {links.map(({ href, label }) => (
              <li key={href}>
                <NavLink href={href}>{label}</NavLink>
              </li>
            ))}
          </ul>
        </Fragment>
      ))}
    </nav>
  );
}

function SignOutButton() {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const { pending, error, run } = useRequest();
  return (
    <>
      <button
        type="button"
        className="btn btn-small"
        disabled={pending}
        onClick={() =>
          run(
            () =>
              authCall(authClient.signOut(), (e) => authErrorMessage(e, 'Could not sign out. Try again.')),
            () => {
              queryClient.clear();
              navigate('/sign-in', { replace: true });
            },
          )
        }
      >
        Sign out
      </button>
      {error && (
        <p className="topbar-error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}

/** The frame of every signed-in page: header, navigation, quota banner; provides `useMe()`. */
export function Shell({ children }: { children: ReactNode }) {
  const me = useQuery(queries.me());

  if (me.isPending || (me.isError && isSignedOut(me.error))) {
    return (
      <main id="main" className="centered-page">
        <Loading label={me.isPending ? 'Loading…' : 'Redirecting to sign in…'} />
      </main>
    );
  }
  if (me.isError) {
    return (
      <main id="main" className="centered-page">
        <h1>Headless CRM</h1>
        <ErrorState error={me.error} onRetry={() => me.refetch()} />
      </main>
    );
  }

  const { user, org, quota_notices } = me.data;
  return (
    <MeContext.Provider value={me.data}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/keys" className="brand">
          Headless CRM
        </Link>
        <span className="org-name">{org.name}</span>
        <div className="topbar-account">
          <span className="user-email">{user.email}</span>
          <SignOutButton />
        </div>
      </header>
      <div className="layout">
        <Nav />
        <main id="main" className="content" tabIndex={-1}>
          <QuotaBanner notices={quota_notices} />
          {children}
        </main>
      </div>
    </MeContext.Provider>
  );
}
