import { getRandomValues } from 'node:crypto';
import { V7Generator } from 'uuidv7';

/** 32-bit words of randomness fetched at once: 4 KB, enough for about 1,300 ids. */
const RANDOM_WORDS = 1024;

/**
 * The `uuidv7` package's random source with a larger buffer. Its own fetches 8 words at a time, a
 * `crypto.getRandomValues` call every two or three ids; each call crosses into C++ and OpenSSL, and a
 * create makes three ids (deal, activity, event). 1.5 µs per id became 0.45 µs (a loop of 300,000 on
 * this machine), and in a profile of POST /deals the ids went from 4.6% to 1.7% of the request (apps/bench/results/HISTORY.md:
 * What the runs showed).
 */
class BufferedRandom {
  private readonly words = new Uint32Array(RANDOM_WORDS);
  private next = RANDOM_WORDS;

  nextUint32(): number {
    if (this.next === RANDOM_WORDS) {
      getRandomValues(this.words);
      this.next = 0;
    }
    return this.words[this.next++] as number;
  }
}

const generator = new V7Generator(new BufferedRandom());

/**
 * A new id: a UUIDv7 (time-ordered, monotonic within a millisecond in this process), the one way every
 * row's id is made.
 */
export const uuidv7 = (): string => generator.generate().toString();
