import type { CustomField } from '../../api.ts';
import { ActionsCell, RowButton } from '../../components/Table.tsx';
import { TYPE_LABELS } from './labels.ts';

/** A value of the API as text to read: strings as they are, the rest as JSON. */
export function showValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The rules of a field in words: required, unique, indexed, its range or pattern, its default. */
function Rules({ field }: { field: CustomField }) {
  const { validation: v } = field;
  const lines = [
    v.min !== undefined && `at least ${v.min}`,
    v.max !== undefined && `at most ${v.max}`,
    v.max_length !== undefined && `at most ${v.max_length} characters`,
  ].filter((line): line is string => Boolean(line));
  // An archived field's index is dropped: not shown as indexed.
  const indexed = field.indexed && !field.archived;
  const none =
    !field.required &&
    !field.unique &&
    !indexed &&
    lines.length === 0 &&
    !v.pattern &&
    field.default === null;
  return (
    <>
      {field.required && <span className="badge badge-info">Required</span>}{' '}
      {field.unique && <span className="badge badge-info">Unique</span>}{' '}
      {indexed && (
        <span className="badge badge-info" title="Filters on it are served by an index">
          Indexed
        </span>
      )}
      {lines.length > 0 && <span className="cell-sub">{lines.join(', ')}</span>}
      {v.pattern && (
        <span className="cell-sub">
          matches <code>{v.pattern}</code>
        </span>
      )}
      {field.default !== null && (
        <span className="cell-sub">
          default <code>{showValue(field.default)}</code>
        </span>
      )}
      {none && <span className="muted">None</span>}
    </>
  );
}

function Options({ field }: { field: CustomField }) {
  if (field.options.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="tag-list option-tags">
      {field.options.map((o) => (
        <li key={o.value} className={o.archived ? 'option-archived' : undefined}>
          <code title={o.label !== o.value ? o.label : undefined}>{o.value}</code>
          {o.label !== o.value && <span className="option-label"> {o.label}</span>}
          {o.archived && <span className="visually-hidden"> (archived)</span>}
        </li>
      ))}
    </ul>
  );
}

/**
 * A field's row of its object's table (a card below 640 px), with, for an admin, Index or Drop index (on a
 * type an index serves) and Archive.
 */
export function FieldRow({
  field,
  indexable,
  onIndex,
  onArchive,
}: {
  field: CustomField;
  indexable: boolean;
  onIndex: () => void;
  onArchive: () => void;
}) {
  return (
    <tr className={field.archived ? 'row-archived' : undefined}>
      <th scope="row" className="cell-strong">
        {/* The key alone where the label is the key (a field created without one). */}
        {field.label === field.key ? <code>{field.key}</code> : field.label}
        {field.label !== field.key && <code className="cell-sub field-key">{field.key}</code>}
        {field.description && <span className="cell-sub">{field.description}</span>}
      </th>
      <td data-label="Type">
        {TYPE_LABELS[field.type]}
        {field.ai_hint && <span className="cell-sub">AI hint: {field.ai_hint.replaceAll('_', ' ')}</span>}
      </td>
      <td data-label="Rules">
        <Rules field={field} />
      </td>
      <td className="cell-options" data-label="Options">
        <Options field={field} />
      </td>
      <td data-label="Status">
        {field.archived ? (
          <span className="badge badge-neutral">Archived</span>
        ) : (
          <span className="badge badge-success">Active</span>
        )}
      </td>
      <ActionsCell>
        {!field.archived && indexable && (
          <RowButton
            onClick={onIndex}
            aria-label={`${field.indexed ? 'Drop index of' : 'Index'} ${field.key}`}
          >
            {field.indexed ? 'Drop index' : 'Index'}
          </RowButton>
        )}
        {!field.archived && (
          <RowButton danger onClick={onArchive} aria-label={`Archive ${field.key}`}>
            Archive
          </RowButton>
        )}
      </ActionsCell>
    </tr>
  );
}
