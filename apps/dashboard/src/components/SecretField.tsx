import { useRef, useState } from 'react';

type Props = {
  /** The accessible name of the read-only field ("API key", "Signing secret", "Invitation link"). */
  label: string;
  value: string;
};

/** A shown-once value in a read-only field with a Copy button. It lives only in its parent's state. */
export function SecretField({ label, value }: Props) {
  const input = useRef<HTMLInputElement>(null);
  const [status, setStatus] = useState<'' | 'copied' | 'selected'>('');

  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
      setStatus('copied');
    } catch {
      // No clipboard access (an insecure origin, or permission refused): select the text for Ctrl+C.
      input.current?.focus();
      input.current?.select();
      setStatus('selected');
    }
  }

  return (
    <div className="secret">
      <div className="secret-row">
        <input
          ref={input}
          className="input secret-input"
          readOnly
          aria-label={label}
          value={value}
          spellCheck={false}
          autoComplete="off"
          onFocus={(event) => event.currentTarget.select()}
        />
        <button type="button" className="btn" onClick={copy}>
          Copy
        </button>
      </div>
      <p className="secret-status" role="status">
        {status === 'copied' && 'Copied to the clipboard.'}
        {status === 'selected' && 'Selected: press Ctrl+C (⌘C on a Mac) to copy it.'}
      </p>
    </div>
  );
}
