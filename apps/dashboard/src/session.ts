import { navigate } from 'wouter/use-browser-location';
import { httpStatusOf } from './api.ts';

/** Where the server mounts the dashboard (Vite's `base` without the trailing slash; wouter's base). */
export const BASE = '/admin';
export const HOME = '/keys';

/** The current location relative to BASE, with its query string: "/webhooks/wh_1?x=1". */
function currentAppPath(): string {
  const { pathname, search } = window.location;
  if (pathname !== BASE && !pathname.startsWith(`${BASE}/`)) return '/';
  return (pathname.slice(BASE.length) || '/') + search;
}

/** A `next` parameter only ever leads to a page of this app: no other origin, no sign-in loop. */
export function safeNext(raw: string | null | undefined): string {
  if (!raw?.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\')) return HOME;
  if (raw === '/' || raw.startsWith('/sign-in') || raw.startsWith('/invite/')) return HOME;
  return raw;
}

export function signInPath(next?: string): string {
  const target = safeNext(next);
  return target === HOME ? '/sign-in' : `/sign-in?next=${encodeURIComponent(target)}`;
}

/** Sends a signed-out person to the sign-in page, remembering the page they were on. */
export function redirectToSignIn(): void {
  const here = currentAppPath();
  if (here.startsWith('/sign-in') || here.startsWith('/invite/')) return;
  navigate(BASE + signInPath(here), { replace: true });
}

export function isSignedOut(error: unknown): boolean {
  return httpStatusOf(error) === 401;
}
