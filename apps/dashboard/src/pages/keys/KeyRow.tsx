import type { ApiKey } from '../../api.ts';
import { ActionsCell, RowButton } from '../../components/Table.tsx';
import { DateTime, isPast, ScopeList } from './KeyFacts.tsx';

function KeyStatus({ apiKey, successor, now }: { apiKey: ApiKey; successor?: ApiKey; now: number }) {
  const replaced = apiKey.replaced_by && (
    <span className="cell-sub">
      Replaced by {successor ? <code className="key-prefix">{successor.prefix}…</code> : 'a new key'}
      {successor?.revoked_at && ', since revoked: rotate it again'}
    </span>
  );
  if (apiKey.revoked_at)
    return (
      <>
        <span className="badge badge-neutral">Revoked</span>
        <span className="cell-sub">
          <DateTime iso={apiKey.revoked_at} />
        </span>
      </>
    );
  if (isPast(apiKey.expires_at, now))
    return (
      <>
        <span className="badge badge-neutral">Expired</span>
        {replaced}
      </>
    );
  if (apiKey.replaced_by && apiKey.expires_at)
    return (
      <>
        <span className="badge badge-warning">Rotated</span>
        <span className="cell-sub">
          Works until <DateTime iso={apiKey.expires_at} />
        </span>
        {replaced}
      </>
    );
  return <span className="badge badge-success">Active</span>;
}

function KeyExpiry({ iso, now }: { iso: string | null; now: number }) {
  if (!iso) return <>Never</>;
  if (!isPast(iso, now)) return <DateTime iso={iso} />;
  return (
    <>
      <span className="text-danger text-strong">Expired</span>
      <span className="cell-sub">
        <DateTime iso={iso} />
      </span>
    </>
  );
}

type Props = {
  apiKey: ApiKey;
  /** The key that replaced it, if it was rotated (and that key is still listed). */
  successor: ApiKey | undefined;
  now: number;
  onRotate: () => void;
  onRevoke: () => void;
};

/** A key's row of the keys table (a card below 640 px), with Rotate and Revoke where it has actions. */
export function KeyRow({ apiKey, successor, now, onRotate, onRevoke }: Props) {
  const usable = !apiKey.revoked_at && !isPast(apiKey.expires_at, now);
  return (
    <tr>
      <th scope="row" className="cell-strong">
        {apiKey.name ?? <span className="muted">Unnamed</span>}
      </th>
      <td data-label="Key">
        <code className="key-prefix">{apiKey.prefix}…</code>
      </td>
      <td data-label="Status">
        <KeyStatus apiKey={apiKey} successor={successor} now={now} />
      </td>
      <td className="cell-scopes" data-label="Access">
        <ScopeList scopes={apiKey.scopes} />
      </td>
      <td data-label="Expires">
        <KeyExpiry iso={apiKey.expires_at} now={now} />
      </td>
      <td data-label="Created">
        <DateTime iso={apiKey.created_at} />
        <span className="cell-sub">by {apiKey.created_by ?? 'unknown'}</span>
      </td>
      <td data-label="Last used">{apiKey.last_used_at ? <DateTime iso={apiKey.last_used_at} /> : 'Never'}</td>
      <ActionsCell>
        {/* A key is rotated once: again only if its successor was revoked. */}
        {usable && (!apiKey.replaced_by || successor?.revoked_at) && (
          <RowButton onClick={onRotate}>Rotate</RowButton>
        )}
        {!apiKey.revoked_at && (
          <RowButton danger onClick={onRevoke}>
            Revoke
          </RowButton>
        )}
      </ActionsCell>
    </tr>
  );
}
