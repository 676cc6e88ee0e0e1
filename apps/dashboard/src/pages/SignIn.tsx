import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useLocation, useSearch } from 'wouter';
import { type AuthError, authCall, authClient } from '../auth.ts';
import { InputField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { usePageTitle, useRequest } from '../hooks.ts';
import { safeNext } from '../session.ts';

function signInProblem(error: AuthError): string {
  const { status, message } = error ?? {};
  if (status === 429) return message || 'Too many attempts. Try again in a minute.';
  if (status === 0) return 'Could not reach the server. Check your connection and try again.';
  // A server or database in trouble is not a wrong password (503 while the database is down).
  if (status !== undefined && status >= 500)
    return 'The server could not sign you in right now. Try again shortly.';
  return 'Wrong email or password';
}

export function SignInPage() {
  usePageTitle('Sign in');
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const search = useSearch();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { pending, error, run } = useRequest();

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(
      () => authCall(authClient.signIn.email({ email: email.trim(), password }), signInProblem),
      () => {
        // Whatever a previous session left in the cache belongs to someone else.
        queryClient.clear();
        navigate(safeNext(new URLSearchParams(search).get('next')), { replace: true });
      },
    );
  }

  return (
    <main id="main" className="auth-page">
      <div className="auth-card">
        <p className="auth-brand">Headless CRM</p>
        <h1>Sign in</h1>
        <form onSubmit={onSubmit} className="form">
          <InputField
            id="sign-in-email"
            label="Email"
            type="email"
            name="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <InputField
            id="sign-in-password"
            label="Password"
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          <FormError error={error} />
          <button type="submit" className="btn btn-primary btn-block" disabled={pending}>
            Sign in
          </button>
        </form>
      </div>
    </main>
  );
}
