import type { ReactNode } from 'react';

type Props = {
  /** The heading's id, which names the section for screen readers. */
  id: string;
  title: string;
  /** On a card of its own (Account, Usage) rather than plain (Team's lists). */
  card?: boolean;
  className?: string;
  children: ReactNode;
};

/** A part of a page under its own heading. */
export function Section({ id, title, card = false, className, children }: Props) {
  const kind = card ? 'card' : 'section';
  return (
    <section className={className ? `${kind} ${className}` : kind} aria-labelledby={id}>
      <h2 id={id} className={`${kind}-title`}>
        {title}
      </h2>
      {children}
    </section>
  );
}
