import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useLocation } from 'wouter';
import { authCall, authClient, authErrorMessage, passwordProblem } from '../auth.ts';
import { InputField, NewPasswordField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { Modal, ModalActions } from '../components/Modal.tsx';
import { Section } from '../components/Section.tsx';
import { Notice, PageHeader } from '../components/States.tsx';
import { type Outcome, useMe, useOutcome, usePageTitle, useRequest } from '../hooks.ts';

function ChangePasswordForm({ outcome }: { outcome: Outcome }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const { pending, error, setError, run } = useRequest();

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const problem = passwordProblem(next, confirm, 'new password');
    if (problem) return setError(problem);
    void run(
      () =>
        authCall(
          authClient.changePassword({
            currentPassword: current,
            newPassword: next,
            revokeOtherSessions: true,
          }),
          (e) => authErrorMessage(e, 'Could not change the password.'),
        ),
      () => {
        setCurrent('');
        setNext('');
        setConfirm('');
        outcome.succeeded('Password changed. Your other sessions have been signed out.');
      },
    );
  }

  return (
    <form className="form form-narrow" onSubmit={onSubmit}>
      <InputField
        id="current-password"
        label="Current password"
        type="password"
        autoComplete="current-password"
        required
        value={current}
        onChange={(e) => setCurrent(e.target.value)}
      />
      <NewPasswordField
        id="new-password"
        label="New password"
        value={next}
        onChange={(e) => setNext(e.target.value)}
      />
      <NewPasswordField
        id="confirm-password"
        label="Confirm new password"
        confirms
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
      />
      <FormError error={error} />
      <div>
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {pending ? 'Changing…' : 'Change password'}
        </button>
      </div>
    </form>
  );
}

function SignOutEverywhereDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const { pending, error, run } = useRequest();

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void run(
      () =>
        authCall(authClient.revokeSessions(), (e) =>
          authErrorMessage(e, 'Could not sign out of all sessions.'),
        ),
      () => {
        queryClient.clear();
        navigate('/sign-in', { replace: true });
      },
    );
  }

  return (
    <Modal title="Sign out of all sessions" onClose={onClose} busy={pending}>
      {(close) => (
        <form onSubmit={onSubmit}>
          <div className="modal-body">
            <p>Every session of your account is ended, on every device, including this one.</p>
            <FormError error={error} />
          </div>
          <ModalActions onCancel={close} pending={pending} label="Sign out everywhere" danger />
        </form>
      )}
    </Modal>
  );
}

export function AccountPage() {
  usePageTitle('Account');
  const { user, org } = useMe();
  const outcome = useOutcome();
  const [confirming, setConfirming] = useState(false);

  return (
    <>
      <PageHeader title="Account" />
      <Notice outcome={outcome} />
      <Section id="profile-heading" title="Profile" card>
        <dl className="details-list">
          <dt>Name</dt>
          <dd>{user.name}</dd>
          <dt>Email</dt>
          <dd>{user.email}</dd>
          <dt>Role</dt>
          <dd>
            {user.role === 'admin' ? 'Admin' : 'Member'} of {org.name}
          </dd>
        </dl>
      </Section>
      <Section id="password-heading" title="Change password" card>
        <p className="muted">Changing it signs out your other sessions.</p>
        <ChangePasswordForm outcome={outcome} />
      </Section>
      <Section id="sessions-heading" title="Sessions" card>
        <p className="muted">
          Lost a device, or signed in on a shared computer? End every session of your account.
        </p>
        <button type="button" className="btn btn-danger-outline" onClick={() => setConfirming(true)}>
          Sign out of all sessions
        </button>
      </Section>
      {confirming && <SignOutEverywhereDialog onClose={() => setConfirming(false)} />}
    </>
  );
}
