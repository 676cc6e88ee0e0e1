import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mentions, type SignalKind, signalRegexSql } from '../src/lexicon.ts';

const SAMPLES = [
  'Competitor Globex is also evaluating',
  'They compared us versus the incumbent',
  'Great call, they are EXCITED',
  'Concerns about price; want to postpone',
  'Budget freeze',
  'canvas and advsory',
  'Nothing to report',
  'The bake-off is next week',
  'ROI approved by the board',
  '',
];

describe('the signal lexicon reads text the same in JavaScript and in PostgreSQL', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create();
  });
  afterAll(async () => {
    await db.close();
  });

  for (const kind of ['positive', 'negative', 'competitor'] as SignalKind[])
    it(`${kind}`, async () => {
      for (const text of SAMPLES) {
        const { rows } = await db.query<{ hit: boolean }>('select $1 ~* $2 as hit', [
          text,
          signalRegexSql(kind),
        ]);
        expect(rows[0]?.hit, `${kind}: ${text}`).toBe(mentions(text, kind));
      }
    });

  it('matches at the start of a word only', () => {
    expect(mentions('canvas', 'competitor')).toBe(false);
    expect(mentions('Globex vs us', 'competitor')).toBe(true);
  });
});
