const NUMBER = /\d+(?:[.,]\d+)*/g;

/** The numbers a text states, in order of appearance (as written, so 12,000 stays one number). */
export const numbersIn = (text: string): string[] => text.match(NUMBER) ?? [];

/** A rewording must keep every number of the original: the facts are computed, not the model's to change. */
export function keepsNumbers(original: string, rewritten: string): boolean {
  const have = new Set(numbersIn(rewritten));
  return numbersIn(original).every((n) => have.has(n));
}

/** One rewording per original, in order, each keeping the original's numbers. */
export function rewordsEach(originals: readonly string[], rewritten: readonly string[]): boolean {
  return (
    originals.length === rewritten.length && originals.every((o, i) => keepsNumbers(o, rewritten[i] ?? ''))
  );
}
