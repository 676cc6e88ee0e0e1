import { createAuthClient } from 'better-auth/react';

/** better-auth's client, mounted by the server at /admin/auth on the same origin. */
export const authClient = createAuthClient({
  baseURL: window.location.origin,
  basePath: '/admin/auth',
});

export const MIN_PASSWORD_LENGTH = 12;

type AuthError = { status?: number; message?: string | undefined } | null | undefined;

/** A sentence for a failed better-auth call (its client resolves with `{ error }` rather than throwing). */
export function authErrorMessage(error: AuthError, fallback = 'Something went wrong. Try again.'): string {
  if (!error) return fallback;
  if (error.status === 0 || error.status === undefined) {
    return error.message || 'Could not reach the server. Check your connection and try again.';
  }
  return error.message || fallback;
}
