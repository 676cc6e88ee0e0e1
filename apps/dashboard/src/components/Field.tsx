import type { InputHTMLAttributes, ReactNode } from 'react';
import { MIN_PASSWORD_LENGTH } from '../auth.ts';

/** What a control needs to be named by its label, described by its hint and marked by its error. */
type ControlProps = { id: string; 'aria-describedby': string | undefined; 'aria-invalid'?: true };

type FieldProps = {
  id: string;
  label: string;
  /** A sentence below the control that describes it, read out with it. */
  hint?: ReactNode;
  /** Space above it, where it follows a fieldset. */
  spaced?: boolean;
  /** What the server (or a check before sending) found wrong with this input, shown below it. */
  error?: string | undefined;
  children: (control: ControlProps) => ReactNode;
};

/** A form control with its label above it and, if it has one, the hint that describes it. */
export function Field({ id, label, hint, spaced = false, error, children }: FieldProps) {
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={spaced ? 'field field-spaced' : 'field'}>
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-describedby': describedBy, ...(error ? { 'aria-invalid': true } : {}) })}
      {error && (
        <p className="field-error" id={errorId} role="alert">
          {error}
        </p>
      )}
      {hint && (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}

type InputFieldProps = Omit<FieldProps, 'children'> & Omit<InputHTMLAttributes<HTMLInputElement>, 'id'>;

/** An input in a Field; `className` adds to the input's own. */
export function InputField({ id, label, hint, spaced, error, className, ...input }: InputFieldProps) {
  return (
    <Field id={id} label={label} hint={hint} spaced={spaced} error={error}>
      {(control) => <input {...control} className={className ? `input ${className}` : 'input'} {...input} />}
    </Field>
  );
}

/**
 * An input where a new password is chosen, or confirmed: the browser holds it to the length too, and the
 * first says how long it must be (passwordProblem checks both before sending).
 */
export function NewPasswordField({
  confirms = false,
  ...input
}: Omit<InputFieldProps, 'hint' | 'type'> & { confirms?: boolean }) {
  return (
    <InputField
      hint={confirms ? undefined : <>At least {MIN_PASSWORD_LENGTH} characters.</>}
      type="password"
      autoComplete="new-password"
      required
      minLength={MIN_PASSWORD_LENGTH}
      {...input}
    />
  );
}
