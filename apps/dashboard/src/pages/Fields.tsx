import { useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { api, type CustomField, type CustomObject, queries } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Section } from '../components/Section.tsx';
import { EmptyState, ErrorState, Loading, Notice, PageHeader } from '../components/States.tsx';
import { Table } from '../components/Table.tsx';
import { useIsAdmin, useOutcome, usePageTitle } from '../hooks.ts';
import { CreateFieldDialog } from './fields/CreateFieldDialog.tsx';
import { FieldRow } from './fields/FieldRow.tsx';
import { objectLabel } from './fields/labels.ts';
import { SchemaFileSection } from './fields/SchemaFileSection.tsx';

export default function FieldsPage() {
  usePageTitle('Fields');
  const isAdmin = useIsAdmin();
  const list = useQuery(queries.fields());
  const [creating, setCreating] = useState(false);
  const [archiving, setArchiving] = useState<{ object: CustomObject; field: CustomField } | null>(null);
  const [indexing, setIndexing] = useState<{ object: CustomObject; field: CustomField } | null>(null);
  const outcome = useOutcome();

  let body: ReactNode;
  if (list.isPending) body = <Loading />;
  else if (list.isError) body = <ErrorState error={list.error} onRetry={() => list.refetch()} />;
  else
    body = list.data.objects.map(({ object, fields }) => (
      <Section key={object} id={`fields-${object}-heading`} title={objectLabel(object)}>
        {fields.length === 0 ? (
          <EmptyState title={`No fields on ${object} yet`}>
            {isAdmin
              ? 'Create one, or apply a schema file below.'
              : 'An admin of your organization can add one.'}
          </EmptyState>
        ) : (
          <Table
            caption={`Fields of ${object}`}
            columns={['Field', 'Type', 'Rules', 'Options', 'Status']}
            actions={isAdmin}
          >
            <tbody>
              {fields.map((field) => (
                <FieldRow
                  key={field.key}
                  field={field}
                  indexable={list.data.types.some((t) => t.type === field.type && t.indexed)}
                  onIndex={() => setIndexing({ object, field })}
                  onArchive={() => setArchiving({ object, field })}
                />
              ))}
            </tbody>
          </Table>
        )}
      </Section>
    ));

  return (
    <>
      <PageHeader
        title="Fields"
        description={
          <>
            Your organization's own fields on its records. Their values are read and written under{' '}
            <code>custom</code> in the API.
          </>
        }
        actions={
          isAdmin &&
          list.isSuccess && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create field
            </button>
          )
        }
      />
      <Notice outcome={outcome} />
      {body}
      <SchemaFileSection isAdmin={isAdmin} outcome={outcome} />
      {creating && list.isSuccess && (
        <CreateFieldDialog
          list={list.data}
          initialObject={list.data.objects[0]?.object ?? 'deals'}
          onCreated={(object, label) => {
            outcome.succeeded(`Created the field ${label} on ${object}.`);
            setCreating(false);
          }}
          onClose={() => setCreating(false)}
        />
      )}
      {indexing && (
        <ConfirmDialog
          title={indexing.field.indexed ? 'Drop index' : 'Index field'}
          confirmLabel={indexing.field.indexed ? 'Drop index' : 'Index'}
          onConfirm={() =>
            api.fields.setIndexed.mutate({
              object: indexing.object,
              key: indexing.field.key,
              indexed: !indexing.field.indexed,
            })
          }
          onConfirmed={() =>
            outcome.succeeded(
              indexing.field.indexed
                ? `Dropped the index of ${indexing.field.key} on ${indexing.object}.`
                : `Indexed the field ${indexing.field.key} on ${indexing.object}.`,
              queries.fields().queryKey,
              ['audit'],
            )
          }
          onClose={() => setIndexing(null)}
        >
          {indexing.field.indexed ? (
            <p>
              Drop the index of <strong>{indexing.field.label}</strong> (<code>{indexing.field.key}</code>) of{' '}
              {indexing.object}? Filters on it keep working, reading each record's values instead: at a large
              size, over the time limit of a list. Values stay as they are.
            </p>
          ) : (
            <p>
              Index <strong>{indexing.field.label}</strong> (<code>{indexing.field.key}</code>) of{' '}
              {indexing.object}? Filters on it (equal, in, ranges, any of, all of) are then served by an
              index. The records that hold a value are indexed now, in this change; each later write of one
              costs a row per value. At most 20 indexed fields per object.
            </p>
          )}
        </ConfirmDialog>
      )}
      {archiving && (
        <ConfirmDialog
          title="Archive field"
          confirmLabel="Archive"
          onConfirm={() => api.fields.archive.mutate({ object: archiving.object, key: archiving.field.key })}
          onConfirmed={() =>
            outcome.succeeded(
              `Archived the field ${archiving.field.key} of ${archiving.object}.`,
              queries.fields().queryKey,
              ['audit'],
            )
          }
          onClose={() => setArchiving(null)}
        >
          <p>
            Archive <strong>{archiving.field.label}</strong> (<code>{archiving.field.key}</code>) of{' '}
            {archiving.object}? Records keep the values they hold, readable, but no write takes the field any
            more, and its key is never used again. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
