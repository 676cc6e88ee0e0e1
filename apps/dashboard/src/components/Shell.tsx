import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
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

function Nav() {
  return (
    <nav className="sidebar" aria-label="Main">
      <p className="nav-group" id="nav-developer">
        Developer
      </p>
      <ul className="nav-list" aria-labelledby="nav-developer">
        <li>
          <NavLink href="/keys">API keys</NavLink>
        </li>
        <li>
          <NavLink href="/usage">Usage</NavLink>
        </li>
        <li>
          <NavLink href="/webhooks">Webhooks</NavLink>
        </li>
      </ul>
      <p className="nav-group" id="nav-settings">
        Settings
      </p>
      <ul className="nav-list" aria-labelledby="nav-settings">
        <li>
          <NavLink href="/team">Team</NavLink>
        </li>
        <li>
          <NavLink href="/audit">Audit log</NavLink>
        </li>
        <li>
          <NavLink href="/account">Account</NavLink>
        </li>
      </ul>
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
