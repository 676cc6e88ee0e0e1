import { createAuthClient } from 'better-auth/react';

/** better-auth's client, mounted by the server at /admin/auth on the same origin. */
export const authClient = createAuthClient({
  baseURL: window.location.origin,
  basePath: '/admin/auth',
});

export const MIN_PASSWORD_LENGTH = 12;

export type AuthError = { status?: number; message?: string | undefined } | null | undefined;

/** A sentence for a failed better-auth call (its client resolves with `{ error }` rather than throwing). */
export function authErrorMessage(error: AuthError, fallback = 'Something went wrong. Try again.'): string {
  if (!error) return fallback;
  if (error.status === 0 || error.status === undefined) {
    return error.message || 'Could not reach the server. Check your connection and try again.';
  }
  return error.message || fallback;
}

/**
 * A better-auth call that fails the way the API's calls do, by throwing: its `{ error }` (status 0 when the
 * server could not be reached) as the sentence `describe` makes of it.
 */
export async function authCall(
  call: Promise<{ error: AuthError }>,
  describe: (error: AuthError) => string,
): Promise<void> {
  const result = await call.catch(() => ({ error: { status: 0, message: undefined } }));
  if (result.error) throw new Error(describe(result.error));
}

/** What is wrong with a new password and its confirmation, if anything; `noun` names it ("new password"). */
export function passwordProblem(password: string, confirm: string, noun: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH)
    return `The ${noun} needs at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password !== confirm) return `The two ${noun}s do not match.`;
  return null;
}
