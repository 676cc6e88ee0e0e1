import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useLocation, useSearch } from 'wouter';
import { authClient } from '../auth.ts';
import { InputField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { usePageTitle } from '../hooks.ts';
import { safeNext } from '../session.ts';

export function SignInPage() {
  usePageTitle('Sign in');
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const search = useSearch();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setPending(true);
    setError(null);
    const result = await authClient.signIn
      .email({ email: email.trim(), password })
      .catch(() => ({ error: { status: 0, message: undefined } }));
    setPending(false);
    if (result.error) {
      const { status, message } = result.error;
      if (status === 429) setError(message || 'Too many attempts. Try again in a minute.');
      else if (status === 0) setError('Could not reach the server. Check your connection and try again.');
      // A server or database in trouble is not a wrong password (503 while the database is down).
      else if (status >= 500) setError('The server could not sign you in right now. Try again shortly.');
      else setError('Wrong email or password');
      return;
    }
    // Whatever a previous session left in the cache belongs to someone else.
    queryClient.clear();
    navigate(safeNext(new URLSearchParams(search).get('next')), { replace: true });
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
