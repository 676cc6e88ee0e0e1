import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type CustomObject, type FieldsList, type FieldType, type Inputs, queries } from '../../api.ts';
import { Field, InputField } from '../../components/Field.tsx';
import { FormError } from '../../components/FormError.tsx';
import { Modal, ModalActions } from '../../components/Modal.tsx';
import { localDateTimeToIso, localTimeZone } from '../../format.ts';
import { useRequest } from '../../hooks.ts';
import { fieldProblem, objectLabel, TYPE_LABELS } from './labels.ts';
import { type OptionRow, OptionsEditor } from './OptionsEditor.tsx';

type CreateInput = Inputs['fields']['create'];

/** A number typed in an input: a number, or the text as it is (the server then says what it expected). */
const numberOrText = (text: string): number | string =>
  text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;

/**
 * The default typed in the form as the value the API takes for `type`, or undefined for none. Only a
 * conversion: whether the value suits the field is the server's check (`default: …`).
 */
function defaultValue(type: FieldType, text: string): unknown {
  if (text.trim() === '') return undefined;
  switch (type) {
    case 'number':
    case 'currency':
      return numberOrText(text);
    case 'boolean':
      return text === 'true';
    case 'multi_select':
      return text
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
    case 'datetime':
      return localDateTimeToIso(text) ?? text;
    case 'json':
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(
          'Default value: not JSON. Write it as JSON, e.g. {"plan": "pro"}, or leave it empty.',
        );
      }
    default:
      return text;
  }
}

/** Asks a field's key, type and rules (the inputs its type takes), and creates it. */
export function CreateFieldDialog({
  list,
  initialObject,
  onCreated,
  onClose,
}: {
  list: FieldsList;
  initialObject: CustomObject;
  onCreated: (object: CustomObject, label: string) => void;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const [object, setObject] = useState<CustomObject>(initialObject);
  const [type, setType] = useState<FieldType>('text');
  const [key, setKey] = useState('');
  const [label, setLabel] = useState('');
  const [options, setOptions] = useState<OptionRow[]>([{ value: '', label: '' }]);
  const [min, setMin] = useState('');
  const [max, setMax] = useState('');
  const [maxLength, setMaxLength] = useState('');
  const [pattern, setPattern] = useState('');
  const [defaultText, setDefaultText] = useState('');
  const [required, setRequired] = useState(false);
  const [unique, setUnique] = useState(false);
  const [indexed, setIndexed] = useState(false);
  const [description, setDescription] = useState('');
  const [aiHint, setAiHint] = useState('');
  const { pending, error, setError, run } = useRequest();

  const rule = list.types.find((t) => t.type === type) ?? list.types[0];
  /** The form's row of each option sent (empty rows are not sent), to show the server's message by it. */
  const [sentRows, setSentRows] = useState<number[]>([]);
  const problem = error ? fieldProblem(error, (sent) => sentRows[sent] ?? sent) : undefined;
  /** The server's message by the input it names; the others below the form. */
  const errorAt = (id: string) => (problem?.inputId === id ? problem.text : undefined);

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    let value: unknown;
    try {
      value = defaultValue(type, defaultText);
    } catch (e) {
      return setError((e as Error).message);
    }
    const validation: NonNullable<CreateInput['validation']> = {};
    if (rule?.range && min.trim() !== '') validation.min = numberOrText(min) as number;
    if (rule?.range && max.trim() !== '') validation.max = numberOrText(max) as number;
    if (rule?.text && maxLength.trim() !== '') validation.max_length = numberOrText(maxLength) as number;
    if (rule?.text && pattern !== '') validation.pattern = pattern;
    const rows = options.flatMap((o, i) => (o.value.trim() !== '' || o.label.trim() !== '' ? [i] : []));
    setSentRows(rows);
    const input: CreateInput = {
      object,
      key: key.trim(),
      type,
      ...(label.trim() ? { label: label.trim() } : {}),
      ...(required ? { required } : {}),
      ...(unique && rule?.unique ? { unique } : {}),
      ...(indexed && rule?.indexed ? { indexed } : {}),
      ...(value !== undefined ? { default: value } : {}),
      ...(rule?.options
        ? {
            options: rows.map((i) => {
              const o = options[i] as OptionRow;
              return { value: o.value.trim(), ...(o.label.trim() ? { label: o.label.trim() } : {}) };
            }),
          }
        : {}),
      ...(Object.keys(validation).length > 0 ? { validation } : {}),
      ...(description.trim() ? { description: description.trim() } : {}),
      ...(aiHint ? { ai_hint: aiHint as NonNullable<CreateInput['ai_hint']> } : {}),
    };
    void run(
      () => api.fields.create.mutate(input),
      (created) => {
        void queryClient.invalidateQueries({ queryKey: queries.fields().queryKey });
        void queryClient.invalidateQueries({ queryKey: ['audit'] });
        onCreated(object, created.label === created.key ? created.key : `${created.label} (${created.key})`);
      },
    );
  }

  const selectOptions = options.map((o) => o.value.trim()).filter(Boolean);
  let defaultInput: ReactNode;
  if (type === 'boolean' || type === 'select')
    defaultInput = (
      <Field id="field-default" label="Default value (optional)" error={errorAt('field-default')}>
        {(control) => (
          <select
            {...control}
            className="input select"
            value={defaultText}
            onChange={(e) => setDefaultText(e.target.value)}
          >
            <option value="">None</option>
            {type === 'boolean' ? (
              <>
                <option value="true">Yes</option>
                <option value="false">No</option>
              </>
            ) : (
              selectOptions.map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))
            )}
          </select>
        )}
      </Field>
    );
  else
    defaultInput = (
      <InputField
        id="field-default"
        label="Default value (optional)"
        error={errorAt('field-default')}
        hint={
          type === 'multi_select'
            ? 'Option values, separated by commas.'
            : type === 'datetime'
              ? `In your time zone (${localTimeZone()}).`
              : type === 'json'
                ? 'As JSON.'
                : 'Given to a new record that leaves the field out.'
        }
        type={type === 'date' ? 'date' : type === 'datetime' ? 'datetime-local' : 'text'}
        className={type === 'date' || type === 'datetime' ? 'input-datetime' : undefined}
        autoComplete="off"
        value={defaultText}
        onChange={(e) => setDefaultText(e.target.value)}
      />
    );

  return (
    <Modal title="Create field" onClose={onClose} busy={pending} wide>
      {(close) => (
        <form onSubmit={onSubmit} noValidate>
          <div className="modal-body form-grid">
            <Field id="field-object" label="On" error={errorAt('field-object')}>
              {(control) => (
                <select
                  {...control}
                  className="input select"
                  value={object}
                  onChange={(e) => setObject(e.target.value as CustomObject)}
                >
                  {list.objects.map((o) => (
                    <option key={o.object} value={o.object}>
                      {objectLabel(o.object)}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field id="field-type" label="Type" error={errorAt('field-type')}>
              {(control) => (
                <select
                  {...control}
                  className="input select"
                  value={type}
                  onChange={(e) => {
                    setType(e.target.value as FieldType);
                    setDefaultText('');
                  }}
                >
                  {list.types.map((t) => (
                    <option key={t.type} value={t.type}>
                      {TYPE_LABELS[t.type]}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <InputField
              id="field-key"
              label="Key"
              hint="How the value is named under custom, e.g. region. It never changes."
              error={errorAt('field-key')}
              required
              maxLength={40}
              autoComplete="off"
              spellCheck={false}
              className="input-mono"
              value={key}
              onChange={(e) => setKey(e.target.value)}
            />
            <InputField
              id="field-label"
              label="Label (optional)"
              hint="Shown to people; the key when left empty."
              error={errorAt('field-label')}
              maxLength={200}
              autoComplete="off"
              value={label}
              onChange={(e) => setLabel(e.target.value)}
            />
            {rule?.options && (
              <div className="form-grid-wide">
                <OptionsEditor options={options} onChange={setOptions} errorAt={errorAt} />
              </div>
            )}
            {rule?.range && (
              <>
                <InputField
                  id="field-min"
                  label="Minimum (optional)"
                  error={errorAt('field-min')}
                  type="number"
                  step="any"
                  value={min}
                  onChange={(e) => setMin(e.target.value)}
                />
                <InputField
                  id="field-max"
                  label="Maximum (optional)"
                  error={errorAt('field-max')}
                  type="number"
                  step="any"
                  value={max}
                  onChange={(e) => setMax(e.target.value)}
                />
              </>
            )}
            {rule?.text && (
              <>
                <InputField
                  id="field-max-length"
                  label="Maximum length (optional)"
                  hint="In characters."
                  error={errorAt('field-max-length')}
                  type="number"
                  min={1}
                  step={1}
                  value={maxLength}
                  onChange={(e) => setMaxLength(e.target.value)}
                />
                <InputField
                  id="field-pattern"
                  label="Pattern (optional)"
                  hint="A regular expression in RE2 syntax the value must match, e.g. ^[A-Z]{3}-\d+$."
                  error={errorAt('field-pattern')}
                  autoComplete="off"
                  spellCheck={false}
                  className="input-mono"
                  value={pattern}
                  onChange={(e) => setPattern(e.target.value)}
                />
              </>
            )}
            {defaultInput}
            <Field id="field-ai-hint" label="AI hint (optional)" error={errorAt('field-ai-hint')}>
              {(control) => (
                <select
                  {...control}
                  className="input select"
                  value={aiHint}
                  onChange={(e) => setAiHint(e.target.value)}
                >
                  <option value="">None</option>
                  {list.ai_hints.map((hint) => (
                    <option key={hint} value={hint}>
                      {hint.replaceAll('_', ' ')}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <div className="form-grid-wide">
              <InputField
                id="field-description"
                label="Description (optional)"
                error={errorAt('field-description')}
                maxLength={1000}
                autoComplete="off"
                value={description}
                onChange={(e) => setDescription(e.target.value)}
              />
            </div>
            <fieldset className="fieldset form-grid-wide">
              <legend>Rules</legend>
              <div className="radio-list">
                <label className="checkbox">
                  <input
                    id="field-required"
                    type="checkbox"
                    checked={required}
                    onChange={(e) => setRequired(e.target.checked)}
                    aria-describedby="field-required-hint"
                  />
                  Required
                </label>
                <p className="hint choice-hint" id="field-required-hint">
                  A new record must have a value (or gets the default). Existing ones must have one already.
                </p>
                {rule?.unique && (
                  <>
                    <label className="checkbox">
                      <input
                        id="field-unique"
                        type="checkbox"
                        checked={unique}
                        onChange={(e) => setUnique(e.target.checked)}
                        aria-describedby="field-unique-hint"
                      />
                      Unique
                    </label>
                    <p className="hint choice-hint" id="field-unique-hint">
                      No two {objectLabel(object).toLowerCase()} hold the same value.
                    </p>
                  </>
                )}
                {rule?.indexed && (
                  <>
                    <label className="checkbox">
                      <input
                        id="field-indexed"
                        type="checkbox"
                        checked={indexed}
                        onChange={(e) => setIndexed(e.target.checked)}
                        aria-describedby="field-indexed-hint"
                      />
                      Indexed
                    </label>
                    <p className="hint choice-hint" id="field-indexed-hint">
                      Filters on the field stay fast in a large organization. At most 20 per object.
                    </p>
                  </>
                )}
              </div>
              {(problem?.inputId === 'field-required' ||
                problem?.inputId === 'field-unique' ||
                problem?.inputId === 'field-indexed') && <FormError error={problem.text} />}
            </fieldset>
            {!problem?.inputId && (
              <div className="form-grid-wide">
                <FormError error={problem?.text ?? null} />
              </div>
            )}
          </div>
          <ModalActions
            onCancel={close}
            pending={pending}
            label="Create field"
            pendingLabel="Creating…"
            disabled={key.trim() === ''}
          />
        </form>
      )}
    </Modal>
  );
}
