import { InputField } from '../../components/Field.tsx';

export type OptionRow = { value: string; label: string };

/** A select's options, one row each (value, optional label), added and removed by buttons. */
export function OptionsEditor({
  options,
  onChange,
  errorAt,
}: {
  options: readonly OptionRow[];
  onChange: (options: OptionRow[]) => void;
  /** The server's message for an input of this editor, if it names one. */
  errorAt: (id: string) => string | undefined;
}) {
  const set = (index: number, change: Partial<OptionRow>) =>
    onChange(options.map((o, i) => (i === index ? { ...o, ...change } : o)));
  return (
    <fieldset className="fieldset options-fieldset">
      <legend>Options</legend>
      <p className="hint" id="field-options-hint">
        The values a record may hold. The label is shown to people; the value when left empty.
      </p>
      <ol className="option-list">
        {options.map((option, index) => (
          // Rows have no identity of their own but their place; removing one re-renders the rest.
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <li key={index} className="option-row">
            <InputField
              id={`field-option-${index}-value`}
              label={`Option ${index + 1} value`}
              error={errorAt(`field-option-${index}-value`)}
              autoComplete="off"
              spellCheck={false}
              className="input-mono"
              maxLength={100}
              value={option.value}
              onChange={(e) => set(index, { value: e.target.value })}
            />
            <InputField
              id={`field-option-${index}-label`}
              label={`Option ${index + 1} label`}
              error={errorAt(`field-option-${index}-label`)}
              autoComplete="off"
              maxLength={200}
              value={option.label}
              onChange={(e) => set(index, { label: e.target.value })}
            />
            <button
              type="button"
              className="btn btn-small btn-ghost option-remove"
              aria-label={`Remove option ${index + 1}`}
              disabled={options.length === 1}
              onClick={() => onChange(options.filter((_, i) => i !== index))}
            >
              Remove
            </button>
          </li>
        ))}
      </ol>
      <button
        type="button"
        className="btn btn-small"
        onClick={() => onChange([...options, { value: '', label: '' }])}
      >
        Add option
      </button>
    </fieldset>
  );
}
