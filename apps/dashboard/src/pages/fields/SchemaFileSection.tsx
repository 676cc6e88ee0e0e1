import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, queries, type SchemaPlan, type SchemaStep } from '../../api.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { Field } from '../../components/Field.tsx';
import { FormError } from '../../components/FormError.tsx';
import { Section } from '../../components/Section.tsx';
import { Table } from '../../components/Table.tsx';
import { formatNumber } from '../../format.ts';
import { type Outcome, useRequest } from '../../hooks.ts';
import { showValue } from './FieldRow.tsx';
import { objectLabel } from './labels.ts';

const ACTIONS: Record<SchemaStep['action'], { label: string; badge: string }> = {
  add: { label: 'Add', badge: 'badge-success' },
  change: { label: 'Change', badge: 'badge-info' },
  convert: { label: 'Convert', badge: 'badge-info' },
  archive: { label: 'Archive', badge: 'badge-warning' },
};

const INDEX_ACTIONS: Record<NonNullable<SchemaStep['index']>['action'], string> = {
  build: 'Index built',
  drop: 'Index dropped',
  rebuild: 'Index built again',
};

function StepDetails({ step }: { step: SchemaStep }) {
  const changes = Object.entries(step.changes ?? {});
  return (
    <>
      {step.problem && <p className="text-danger step-problem">Cannot apply: {step.problem}</p>}
      {step.action === 'add' && !step.problem && <span className="muted">A new field</span>}
      {step.conversion && (
        <p className="muted">
          {`${formatNumber(step.conversion.converted)} of ${formatNumber(step.conversion.records)} values convert (${formatNumber(step.conversion.changed)} change)`}
          {step.conversion.failed > 0 ? `; ${formatNumber(step.conversion.failed)} do not.` : '.'}
        </p>
      )}
      {changes.length > 0 && (
        <ul className="change-list">
          {changes.map(([attribute, { from, to }]) => (
            <li key={attribute}>
              <code>{attribute}</code>:{' '}
              {from === null ? <span className="muted">none</span> : showValue(from)} →{' '}
              {to === null ? <span className="muted">none</span> : showValue(to)}
            </li>
          ))}
        </ul>
      )}
      {step.index && (
        <p className="muted">
          {/* A new field has no values yet: only that it is indexed. */}
          {step.action === 'add'
            ? 'Indexed.'
            : `${INDEX_ACTIONS[step.index.action]} (${formatNumber(step.index.records)} ${step.index.records === 1 ? 'record' : 'records'}).`}
        </p>
      )}
      {step.action === 'archive' && (
        <span>
          {step.records_with_values
            ? `${formatNumber(step.records_with_values)} ${step.records_with_values === 1 ? 'record holds a value: it keeps it' : 'records hold a value: they keep it'}, readable, and no write takes the field any more.`
            : 'No record holds a value.'}{' '}
          The key is never used again.
        </span>
      )}
    </>
  );
}

function PlanTable({ plan, isAdmin }: { plan: SchemaPlan; isAdmin: boolean }) {
  if (plan.steps.length === 0)
    return <p className="plan-summary">The organization's fields already are what this file says.</p>;
  const count = (action: SchemaStep['action']) => plan.steps.filter((s) => s.action === action).length;
  const problems = plan.steps.filter((s) => s.problem).length;
  return (
    <>
      <p className="plan-summary">
        {count('add')} to add, {count('change')} to change, {count('archive')} to archive.{' '}
        {problems > 0 ? (
          <strong className="text-danger">
            {problems} {problems === 1 ? 'step has a problem' : 'steps have problems'}: nothing can be applied
            until the file or the data changes.
          </strong>
        ) : (
          isAdmin && 'Applying makes every step in one transaction.'
        )}
      </p>
      <Table caption="Plan of the schema file" columns={['Field', 'Object', 'Step', 'What changes']}>
        <tbody>
          {plan.steps.map((step) => (
            <tr key={`${step.object}.${step.key}`}>
              <th scope="row">
                <code>{step.key}</code>
              </th>
              <td data-label="Object">{objectLabel(step.object)}</td>
              <td data-label="Step">
                <span className={`badge ${ACTIONS[step.action].badge}`}>{ACTIONS[step.action].label}</span>
              </td>
              <td className="cell-details" data-label="What changes">
                <StepDetails step={step} />
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
    </>
  );
}

/**
 * A schema file pasted (as `crm schema export` writes it), its plan from the server, then Apply for an
 * admin. The plan is of the text as it was sent: changing the text takes it away.
 */
export function SchemaFileSection({ isAdmin, outcome }: { isAdmin: boolean; outcome: Outcome }) {
  const queryClient = useQueryClient();
  const [text, setText] = useState('');
  const [planned, setPlanned] = useState<{ text: string; plan: SchemaPlan } | null>(null);
  const [applying, setApplying] = useState(false);
  const { pending, error, setError, run } = useRequest();
  const plan = planned?.text === text ? planned.plan : null;

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (text.trim() === '') return setError('Paste a schema file first, or start from the current fields.');
    const sent = text;
    void run(
      () => api.fields.schemaPlan.mutate({ text: sent }),
      (result) => setPlanned({ text: sent, plan: result }),
    );
  }

  function startFromCurrent() {
    void run(
      () => api.fields.schemaExport.query(),
      (file) => {
        setText(`${JSON.stringify(file, null, 2)}\n`);
        setPlanned(null);
      },
    );
  }

  return (
    <Section id="schema-file-heading" title="Schema file" card className="schema-file">
      <p className="hint">
        The fields as a file kept in your repository (<code>crm schema export</code> writes one, as JSON).
        Paste one to see what applying it would add, change and archive.
        {isAdmin ? '' : ' Only an admin can apply it.'}
      </p>
      <form onSubmit={onSubmit}>
        <Field
          id="schema-file-text"
          label="Schema file (JSON)"
          hint="An object the file leaves out is not touched; one listed with [] has every field archived."
        >
          {(control) => (
            <textarea
              {...control}
              className="input textarea"
              rows={12}
              spellCheck={false}
              autoComplete="off"
              value={text}
              onChange={(e) => setText(e.target.value)}
              aria-invalid={error ? true : undefined}
            />
          )}
        </Field>
        <FormError error={error} spaced />
        <div className="form-buttons">
          <button type="submit" className="btn btn-primary" disabled={pending}>
            {pending ? 'Working…' : 'Show plan'}
          </button>
          <button type="button" className="btn" disabled={pending} onClick={startFromCurrent}>
            Start from the current fields
          </button>
        </div>
      </form>
      {plan && (
        <div className="plan" aria-live="polite">
          <h3 className="plan-title">Plan</h3>
          <PlanTable plan={plan} isAdmin={isAdmin} />
          {isAdmin && plan.steps.length > 0 && (
            <div className="form-buttons">
              <button
                type="button"
                className="btn btn-primary"
                disabled={!plan.applicable}
                onClick={() => setApplying(true)}
              >
                Apply
              </button>
            </div>
          )}
        </div>
      )}
      {applying && plan && (
        <ConfirmDialog
          title="Apply schema file"
          confirmLabel="Apply"
          onConfirm={() => api.fields.schemaApply.mutate({ text })}
          onConfirmed={() => {
            setPlanned(null);
            void queryClient.invalidateQueries({ queryKey: ['audit'] });
            outcome.succeeded(
              `Applied the schema file: ${plan.steps.length} ${plan.steps.length === 1 ? 'step' : 'steps'}.`,
              queries.fields().queryKey,
            );
          }}
          onClose={() => setApplying(false)}
        >
          <p>
            Make the {plan.steps.length} {plan.steps.length === 1 ? 'step' : 'steps'} of the plan, all in one
            transaction?
            {plan.steps.some((s) => s.action === 'archive') &&
              ' Archived fields take no more values, and their keys are never used again.'}
          </p>
        </ConfirmDialog>
      )}
    </Section>
  );
}
