/**
 * Why a form was not sent or did not succeed: a check before sending, or the server's answer. An alert,
 * so a screen reader says it as it appears; nothing while there is no problem.
 */
export function FormError({ error, spaced = false }: { error: string | null; spaced?: boolean }) {
  if (!error) return null;
  return (
    <p className={spaced ? 'form-error field-spaced' : 'form-error'} role="alert">
      {error}
    </p>
  );
}
