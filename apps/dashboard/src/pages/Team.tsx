import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type Invitation, type Member, queries, type Role } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Field, InputField } from '../components/Field.tsx';
import { FormError } from '../components/FormError.tsx';
import { Modal, ModalActions } from '../components/Modal.tsx';
import { Section } from '../components/Section.tsx';
import { ShownOnce } from '../components/ShownOnce.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { ActionsCell, RowButton, Table } from '../components/Table.tsx';
import { formatDate, formatDateTime } from '../format.ts';
import { type Outcome, useIsAdmin, useMe, useOutcome, usePageTitle, useRequest } from '../hooks.ts';

const ROLE_LABELS: Record<Role, string> = { admin: 'Admin', member: 'Member' };

/** Creates an invitation, then shows its link once (component state only). */
function InviteDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [role, setRole] = useState<Role>('member');
  const [email, setEmail] = useState('');
  const { pending, error, run } = useRequest();
  const [created, setCreated] = useState<{ url: string; expiresAt: string } | null>(null);

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const trimmed = email.trim();
    void run(
      () => api.team.invite.mutate(trimmed ? { role, email: trimmed } : { role }),
      (result) => {
        // The server may answer with a path; show a full link that can be sent as it is.
        setCreated({ url: new URL(result.url, window.location.origin).href, expiresAt: result.expires_at });
        void queryClient.invalidateQueries({ queryKey: queries.team().queryKey });
      },
    );
  }

  return (
    <Modal title={created ? 'Invitation link' : 'Invite a teammate'} onClose={onClose} busy={pending}>
      {(close) =>
        created ? (
          <ShownOnce
            label="Invitation link"
            secret={created.url}
            warning={
              <>
                Valid until {formatDateTime(created.expiresAt)}, for one use. The link is shown once: copy it
                now.
              </>
            }
            onDone={close}
          >
            <p>Send this link to the person you invite. Opening it lets them create their account.</p>
          </ShownOnce>
        ) : (
          <form onSubmit={onSubmit}>
            <div className="modal-body">
              <Field
                id="invitation-role"
                label="Role"
                hint="Members can see everything; only admins can create, revoke, delete, invite and change roles."
              >
                {(control) => (
                  <select
                    {...control}
                    className="input select"
                    value={role}
                    onChange={(e) => setRole(e.target.value as Role)}
                  >
                    <option value="member">Member</option>
                    <option value="admin">Admin</option>
                  </select>
                )}
              </Field>
              <InputField
                id="invitation-email"
                label="Email (optional)"
                hint="If set, only this address can accept the invitation."
                type="email"
                autoComplete="off"
                value={email}
                onChange={(e) => setEmail(e.target.value)}
              />
              <FormError error={error} />
            </div>
            <ModalActions
              onCancel={close}
              pending={pending}
              label="Create invitation"
              pendingLabel="Creating…"
            />
          </form>
        )
      }
    </Modal>
  );
}

/**
 * A member's role: choosing another one asks first. A select fires a change on every arrow key, so a
 * change applied at once let a keyboard user grant or take admin rights by moving through the options.
 */
function RoleSelect({ member, outcome }: { member: Member; outcome: Outcome }) {
  const [asked, setAsked] = useState<Role | null>(null);
  const id = `role-${member.user_id}`;
  return (
    <>
      <label htmlFor={id} className="visually-hidden">
        Role of {member.email}
      </label>
      <select
        id={id}
        className="input select select-small"
        value={asked ?? member.role}
        onChange={(e) => setAsked(e.target.value as Role)}
      >
        <option value="admin">Admin</option>
        <option value="member">Member</option>
      </select>
      {asked && (
        <ConfirmDialog
          title="Change role"
          confirmLabel={`Make ${ROLE_LABELS[asked].toLowerCase()}`}
          onConfirm={() => api.team.setRole.mutate({ user_id: member.user_id, role: asked })}
          onConfirmed={() =>
            outcome.succeeded(`${member.email} is now ${ROLE_LABELS[asked].toLowerCase()}.`, ['team'], ['me'])
          }
          onClose={() => setAsked(null)}
        >
          <p>
            Make <strong>{member.email}</strong> {asked === 'admin' ? 'an admin' : 'a member'}?{' '}
            {asked === 'admin'
              ? 'Admins create and revoke API keys, manage webhooks and change the team.'
              : 'Members see keys, usage, webhooks, team and audit log, and change nothing.'}
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}

export function TeamPage() {
  usePageTitle('Team');
  const me = useMe();
  const isAdmin = useIsAdmin();
  const team = useQuery(queries.team());
  const [inviting, setInviting] = useState(false);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const outcome = useOutcome();

  let body: ReactNode;
  if (team.isPending) body = <Loading />;
  else if (team.isError) body = <ErrorState error={team.error} onRetry={() => team.refetch()} />;
  else {
    const { members, invitations } = team.data;
    body = (
      <>
        <Section id="members-heading" title="Members">
          <Table caption="Members" columns={['Name', 'Email', 'Role', 'Joined']} actions={isAdmin}>
            <tbody>
              {members.map((member) => (
                <tr key={member.user_id}>
                  <th scope="row" className="cell-strong">
                    {member.name}
                    {member.user_id === me.user.id && <span className="muted"> (you)</span>}
                  </th>
                  <td data-label="Email">{member.email}</td>
                  <td data-label="Role">
                    {isAdmin ? <RoleSelect member={member} outcome={outcome} /> : ROLE_LABELS[member.role]}
                  </td>
                  <td data-label="Joined">{formatDate(member.created_at)}</td>
                  <ActionsCell>
                    <RowButton danger onClick={() => setRemoving(member)}>
                      Remove
                    </RowButton>
                  </ActionsCell>
                </tr>
              ))}
            </tbody>
          </Table>
        </Section>
        <Section id="invitations-heading" title="Pending invitations">
          {invitations.length === 0 ? (
            <EmptyState title="No pending invitations" />
          ) : (
            <Table
              caption="Invitations"
              columns={['For', 'Role', 'Invited by', 'Created', 'Expires']}
              actions={isAdmin}
            >
              <tbody>
                {invitations.map((inv) => (
                  <tr key={inv.id}>
                    <th scope="row">{inv.email ?? <span className="muted">Anyone with the link</span>}</th>
                    <td data-label="Role">{ROLE_LABELS[inv.role]}</td>
                    <td data-label="Invited by">
                      {inv.invited_by ?? <span className="muted">Unknown</span>}
                    </td>
                    <td data-label="Created">{formatDateTime(inv.created_at)}</td>
                    <td data-label="Expires">{formatDateTime(inv.expires_at)}</td>
                    <ActionsCell>
                      <RowButton danger onClick={() => setRevoking(inv)}>
                        Revoke
                      </RowButton>
                    </ActionsCell>
                  </tr>
                ))}
              </tbody>
            </Table>
          )}
        </Section>
      </>
    );
  }

  return (
    <>
      <PageHeader
        title="Team"
        description={`The people who can sign in to ${me.org.name}'s dashboard.`}
        actions={
          isAdmin && (
            <button type="button" className="btn btn-primary" onClick={() => setInviting(true)}>
              Invite
            </button>
          )
        }
      />
      <Notice outcome={outcome} />
      {body}
      {inviting && <InviteDialog onClose={() => setInviting(false)} />}
      {removing && (
        <ConfirmDialog
          title="Remove member"
          confirmLabel="Remove"
          onConfirm={() => api.team.remove.mutate({ user_id: removing.user_id })}
          onConfirmed={() => outcome.succeeded(`Removed ${removing.email}.`, ['team'])}
          onClose={() => setRemoving(null)}
        >
          <p>
            Remove <strong>{removing.email}</strong> from {me.org.name}? They will no longer be able to sign
            in to its dashboard.
          </p>
        </ConfirmDialog>
      )}
      {revoking && (
        <ConfirmDialog
          title="Revoke invitation"
          confirmLabel="Revoke"
          onConfirm={() => api.team.revokeInvitation.mutate({ id: revoking.id })}
          onConfirmed={() => outcome.succeeded('Invitation revoked.', ['team'])}
          onClose={() => setRevoking(null)}
        >
          <p>
            Revoke the {ROLE_LABELS[revoking.role].toLowerCase()} invitation
            {revoking.email ? ` for ${revoking.email}` : ''}? Its link stops working.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
