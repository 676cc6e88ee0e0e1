import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { Link, useLocation, useParams } from 'wouter';
import { api, httpStatusOf, type Outputs, queries } from '../api.ts';
import { passwordProblem } from '../auth.ts';
import { InputField, NewPasswordField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { ErrorState, Loading } from '../components/States.tsx';
import { formatDateTime } from '../format.ts';
import { usePageTitle, useRequest } from '../hooks.ts';
import { HOME } from '../session.ts';

type Invitation = Outputs['invitation']['get'];

function AcceptForm({ token, invitation }: { token: string; invitation: Invitation }) {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const [name, setName] = useState('');
  const [email, setEmail] = useState(invitation.email ?? '');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const { pending, error, setError, run } = useRequest();

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const problem = passwordProblem(password, confirm, 'password');
    if (problem) return setError(problem);
    void run(
      () =>
        api.invitation.accept.mutate({
          token,
          name: name.trim(),
          email: (invitation.email ?? email).trim(),
          password,
        }),
      () => {
        queryClient.clear();
        navigate(HOME, { replace: true });
      },
    );
  }

  return (
    <form onSubmit={onSubmit} className="form">
      <InputField
        id="invite-name"
        label="Your name"
        name="name"
        autoComplete="name"
        required
        maxLength={200}
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <InputField
        id="invite-email"
        label="Email"
        hint={invitation.email !== null ? 'This invitation is for this address.' : undefined}
        type="email"
        name="email"
        autoComplete="username"
        required
        readOnly={invitation.email !== null}
        value={email}
        onChange={(e) => setEmail(e.target.value)}
      />
      <NewPasswordField
        id="invite-password"
        label="Password"
        name="password"
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <NewPasswordField
        id="invite-confirm"
        label="Confirm password"
        confirms
        name="confirm-password"
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
      />
      <FormError error={error} />
      <button type="submit" className="btn btn-primary btn-block" disabled={pending}>
        Join {invitation.org_name}
      </button>
    </form>
  );
}

export function InvitePage() {
  usePageTitle('Join your team');
  const { token = '' } = useParams<{ token: string }>();
  const invitation = useQuery(queries.invitation(token));

  let body: ReactNode;
  let title = 'Invitation';
  if (invitation.isPending) {
    body = <Loading />;
  } else if (invitation.isError) {
    const status = httpStatusOf(invitation.error);
    if (status === 404 || status === 400) {
      title = 'This invitation cannot be used';
      body = (
        <>
          <p>
            The link is invalid, has expired, or has already been used. Ask an admin of your organization for
            a new one.
          </p>
          <p>
            Already have an account? <Link href="/sign-in">Sign in</Link>.
          </p>
        </>
      );
    } else {
      body = <ErrorState error={invitation.error} onRetry={() => invitation.refetch()} />;
    }
  } else {
    const { org_name, role, expires_at } = invitation.data;
    title = `Join ${org_name} as ${role}`;
    body = (
      <>
        <p className="muted">
          Create your account to join. This invitation is valid until {formatDateTime(expires_at)}.
        </p>
        <AcceptForm token={token} invitation={invitation.data} />
      </>
    );
  }

  return (
    <main id="main" className="auth-page">
      <div className="auth-card">
        <p className="auth-brand">Headless CRM</p>
        <h1>{title}</h1>
        {body}
      </div>
    </main>
  );
}
