import type { EntityManager, Tables } from '@crm/db';
import {
  type Expression,
  expressionBuilder,
  type InferResult,
  type Kysely,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import { compileOnlyOrgDb, currentOrg, orgQuery } from '../../org-scope.ts';
import { afterAnchor, asJson, checkCursor } from '../../read-model.ts';

/** How many deals and how many contacts one search returns at most. */
export const SEARCH_LIMIT = 20;

/** `%q%` with LIKE's own wildcards escaped, so "50%" finds "50%" and not everything. */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The searched values' words, per table alias: one text each, the same as the `*_search_words` indexes'
 * expressions (Migration20261202000300), which the planner uses only for that very expression.
 */
const WORD_DOCS = {
  d: sql`to_tsvector('simple', coalesce(d.title, '') || ' ' || coalesce(d.company_name, ''))`,
  c: sql`to_tsvector('simple', c.name || ' ' || coalesce(c.email, '') || ' ' || coalesce(c.title, ''))`,
  co: sql`to_tsvector('simple', co.name || ' ' || coalesce(co.domain, ''))`,
} as const;

/** Whether `q` has a word (a letter or a digit): a term of punctuation alone ("__") is matched as a substring only. */
export const hasWords = (q: string) => /[\p{L}\p{N}]/u.test(q);

/** The `words` argument of the matchers below: the term when it has words, else left out (a query's other shape). */
export const wordsOf = (q: string) => (hasWords(q) ? q : undefined);

/**
 * A row (as `alias`) in which every word of `words` begins a word, in any order (`hooli renew` finds
 * "Renewal for Hooli Systems"): the term split and lower-cased by the parser that made the index, each
 * word a prefix (`hooli:* & renew:*`). False when left out (`wordsOf`).
 */
export const wordsMatch = (alias: keyof typeof WORD_DOCS, words: string | Expression<string> | undefined) =>
  words === undefined
    ? sql<SqlBool>`false`
    : sql<SqlBool>`${WORD_DOCS[alias]} @@ regexp_replace(plainto_tsquery('simple', ${words})::text, '''(?= |$)', ''':*', 'g')::tsquery`;

/**
 * A row (as `alias`) of which every word of `words` is a whole word (`hooli & renewal`): search's rank
 * before the word prefixes. The words index reads whole words by their posting lists, skipping through
 * the longer ones; a prefix (`renewal:*`) has every posting of every word it begins gathered first (at
 * a million deals `hooli:* & renewal:*` took 22-29 ms, `hooli & renewal` 9).
 */
const wholeWordsMatch = (alias: 'd' | 'c', words: string | undefined) =>
  words === undefined
    ? sql<SqlBool>`false`
    : sql<SqlBool>`${WORD_DOCS[alias]} @@ plainto_tsquery('simple', ${words})`;

/** The columns a term is found inside (`%term%`), per table alias: each has a trigram index. */
const SEARCHED = {
  d: ['title', 'company_name'],
  c: ['name', 'email', 'title'],
  co: ['name', 'domain'],
} as const;

/** A row (as `alias`) of which a searched column contains the pattern (a value, or an expression: `unseenPattern`). */
const containsIn = (alias: keyof typeof SEARCHED, pattern: string | Expression<string>) =>
  sql<SqlBool>`(${sql.join(
    SEARCHED[alias].map((c) => sql`${sql.ref(`${alias}.${c}`)} ilike ${pattern}`),
    sql` or `,
  )})`;

/**
 * A contact (as `c`) matching a term: its name, e-mail or title contains it (`pattern`, `likePattern`), or
 * every word of it begins one of their words (`words`, `wordsOf`). What search and `GET /contacts?q=` match.
 */
export const contactMatches = (
  pattern: string | Expression<string>,
  words: string | Expression<string> | undefined,
) => sql<SqlBool>`(${containsIn('c', pattern)} or ${wordsMatch('c', words)})`;

/**
 * A company (as `co`) matching a term (its name or domain contains it, or each of its words begins one of
 * theirs): what search and `GET /companies?q=` match.
 */
export const companyMatches = (
  pattern: string | Expression<string>,
  words: string | Expression<string> | undefined,
) => sql<SqlBool>`(${containsIn('co', pattern)} or ${wordsMatch('co', words)})`;

const tables = expressionBuilder<Tables, never>();

/** How long a process trusts an organization's kept sizes (they only pick a plan: both plans are exact). */
const SIZE_TTL_MS = 60_000;

/**
 * The newest SEARCH_LIMIT rows of `rows` (one table's rows, with id, created_at and the columns `match`
 * reads, as `alias`) that match.
 *
 * In a large organization the planner, which estimates a `%term%` match from its statistics, may walk the
 * (org_id, created_at) index for a term it takes for common of which a hundred rows match: a walk of the
 * whole organization (measured at a million deals: up to 490 ms, where the trigram indexes answer in
 * 15-60). So a large organization's search reads its `window` newest rows first; if SEARCH_LIMIT of
 * them match, they are the answer (every other match is older); if not, the term is rare, and every match
 * is read over the trigram indexes (the `offset 0` subquery is planned for all its rows, where a walk is
 * never the cheaper plan) and sorted. The branches sit behind one-time filters, so one of them runs.
 *
 * The builder is untyped inside (it serves both tables); the caller names the rows' type.
 */
function newestMatches<Row>(
  // biome-ignore lint/suspicious/noExplicitAny: one helper for the deals' and the contacts' search
  db: Kysely<any>,
  large: boolean,
  alias: 'd' | 'c',
  // biome-ignore lint/suspicious/noExplicitAny: see above
  rows: SelectQueryBuilder<any, any, Row>,
  match: Expression<SqlBool>,
  window: number,
) {
  // Built without the scope plugin: a builder of `db` would be scoped when nested and again with the whole.
  db = db.withoutPlugins();
  const newestFirst = <Q extends SelectQueryBuilder<never, never, unknown>>(q: Q) =>
    q.orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref('id'), 'desc') as Q;
  const limit = sql.lit(SEARCH_LIMIT);
  const all = () => db.selectFrom(rows.as(alias)).selectAll();
  type Rows = SelectQueryBuilder<Record<string, Row>, string, Row>;
  if (!large) return newestFirst(all().where(match)).limit(limit) as unknown as Rows;
  const found = sql<number>`(select count(*) from hits)`;
  const rare = newestFirst(
    db
      .selectFrom(all().where(match).offset(sql.lit(0)).as('every_match'))
      .selectAll()
      .where(found, '<', limit),
  ).limit(limit);
  return db
    .with('newest', () => newestFirst(all()).limit(window))
    .with('hits', (qc) =>
      newestFirst(qc.selectFrom(`newest as ${alias}`).selectAll().where(match)).limit(limit),
    )
    .selectFrom('hits')
    .selectAll()
    .where(found, '=', limit)
    .unionAll(db.selectFrom(rare.as('rare')).selectAll()) as unknown as Rows;
}

/**
 * How many matches a search and `GET /contacts?q=` count at most: up to it the count is exact, beyond it
 * the answer says "more than" it (docs/api/lists-and-search.md: Search). Counting stops at the bound's
 * next match, so a common term costs what a thousand matches cost, not what all of them do.
 */
export const MATCH_COUNT_BOUND = 1000;

/**
 * The rows of `from` whose `key` (`keyOf`) begins with the term, counted up to MATCH_COUNT_BOUND + 1 in
 * the key's order: read down its prefix index whatever the planner's estimate. Without the order, a prefix
 * it takes for common (its statistics are every organization's) was counted by a sequential scan that
 * stops at the bound's next match, reading the table from its start: another organization's rows first.
 */
const countUpToBound = (
  from: 'deals as d' | 'contacts as c',
  key: Expression<string>,
  term: Expression<string>,
) =>
  sql<string>`(select count(*) from ${tables
    // biome-ignore lint/suspicious/noExplicitAny: one helper for both tables
    .selectFrom(from as any)
    .select(sql.lit(1).as('one'))
    .where(prefixRange(key, term))
    .orderBy(key)
    .limit(sql.lit(MATCH_COUNT_BOUND + 1))
    .as('m')})`;

/**
 * How many rows of `from` match, counted up to MATCH_COUNT_BOUND + 1: the rows of the CTE `found`
 * (`foundRows`). Two subsets are counted first, each cheaply: the rows whose `prefixColumns` begin with the
 * term, down the prefix indexes (a thousand index entries), and the rows whose words begin with the term's
 * words (the CTE `words`, over the words index). When either has more than the bound, so does the whole,
 * and the trigram indexes are not read (the CASE runs its subquery only when reached). A common company
 * name took 84 ms to count over them at a million deals, its trigrams being everywhere; two words common
 * apart ("Hooli renewal"), 62 ms.
 */
/** The most rows beginning with the term in one of `prefixColumns`, each counted up to MATCH_COUNT_BOUND + 1 down its prefix index. */
const mostByPrefix = (
  from: 'deals as d' | 'contacts as c',
  prefixColumns: string[],
  term: Expression<string>,
) => {
  const alias = from.slice(-1);
  const byPrefix = prefixColumns.map((c) => countUpToBound(from, keyOf(`${alias}.${c}`), term));
  return (byPrefix.length > 1 ? sql`greatest(${sql.join(byPrefix)})` : byPrefix[0]) as Expression<number>;
};

const boundedCount = (ctes: SearchCtes) => {
  const { found, words, whole } = ctes;
  const most = sql`greatest((select n from ${sql.table(ctes.most)}), (select count(*) from ${sql.table(whole)}), (select count(*) from ${sql.table(words)}))`;
  return sql<string>`case when ${most} > ${sql.lit(MATCH_COUNT_BOUND)} then ${sql.lit(MATCH_COUNT_BOUND + 1)} else (select count(*) from ${sql.table(found)}) end`;
};

/** A column's lower-cased value in byte order: what the *_prefix indexes (Migration20261130000100) hold. */
const keyOf = (column: string) => sql<string>`lower(${sql.ref(column)}) collate "C"`;

/**
 * The CTEs of one table's search: `whole`, the rows of which each word of the term is a whole word;
 * `words`, those whose words begin with the term's (read only when `whole` has no more than the bound);
 * `found`, every match (read only when both have no more than the bound).
 */
interface SearchCtes {
  found: string;
  words: string;
  whole: string;
  /** One row, `n`: the most rows beginning with the term in one prefix column (`mostByPrefix`), read once. */
  most: string;
}

/** A key (`keyOf`) that begins with the term, case-insensitively: one range of its prefix index. */
const prefixRange = (key: Expression<string>, term: Expression<string>) =>
  // U+10FFFF, the last code point: every value that begins with the term sorts before term || it.
  sql<SqlBool>`(${key} >= lower(${term}) and ${key} < lower(${term}) || chr(1114111))`;

/**
 * The SEARCH_LIMIT best rows of `from` whose `column` is the term or begins with it (case-insensitively),
 * read in order down the column's prefix index: equal first (`r` 0, then 1), then by the value (`k`), then
 * newest first. However many rows hold the value, this reads 20 index entries.
 */
const prefixMatches = (from: 'deals as d' | 'contacts as c', column: string, term: Expression<string>) => {
  const alias = from.slice(-1);
  const key = keyOf(`${alias}.${column}`);
  return (
    tables
      // biome-ignore lint/suspicious/noExplicitAny: one helper for both tables
      .selectFrom(from as any)
      .select([
        sql.ref(`${alias}.id`).as('id'),
        sql.ref(`${alias}.created_at`).as('created_at'),
        sql<number>`case when ${key} = lower(${term}) then 0 else 1 end`.as('r'),
        key.as('k'),
      ])
      .where(prefixRange(key, term))
      .orderBy(key)
      .orderBy(sql.ref(`${alias}.created_at`), 'desc')
      .orderBy(sql.ref(`${alias}.id`), 'desc')
      .limit(sql.lit(SEARCH_LIMIT))
  );
};

/** A ranked list's rows as one json array, best first (`[]` when none): `x`'s rows, its columns as each object's keys. */
const rankedAsJson = (rows: Expression<unknown>) =>
  sql`(select coalesce(json_agg(x order by x.r, x.k, x.created_at desc, x.id desc), '[]'::json) from ${rows} x)`;

/**
 * One table's ranked matches, as ids with their rank (`r`: 0 equal, 1 begins with, 2 each word of the term
 * is a word, 3 each word begins a word, 4 contains elsewhere), key and creation, each rank's best
 * SEARCH_LIMIT at most:
 * - ranks 0-1: the prefix matches of `prefixColumns` (each column's best SEARCH_LIMIT);
 * - ranks 2 and 3: the newest rows of the CTE `whole` (`words`) when it holds them all (no more than the
 *   bound), else the newest of its matches read by the planner's choice; rank 3 read only when ranks 0-2
 *   give fewer than SEARCH_LIMIT (whole words are read by their posting lists, a prefix's postings are
 *   gathered first: the costlier read);
 * - rank 4, read only when ranks 0-3 give fewer than SEARCH_LIMIT: the newest of `found` when it holds
 *   every match, else the newest rows containing the term (`contains`, `newestMatches`).
 * A row found in several ranks keeps its best. The best SEARCH_LIMIT of these are the best of all matches.
 */
function rankedMatches(
  // biome-ignore lint/suspicious/noExplicitAny: one helper for the deals' and the contacts' search
  db: Kysely<any>,
  from: 'deals as d' | 'contacts as c',
  prefixColumns: string[],
  term: Expression<string>,
  matching: { whole: Expression<SqlBool>; words: Expression<SqlBool> },
  // biome-ignore lint/suspicious/noExplicitAny: see above
  contains: SelectQueryBuilder<any, any, { id: string; created_at: Date }>,
  ctes: SearchCtes,
) {
  const alias = from.slice(-1);
  // Each walk as a subquery: a union's branches cannot carry their own order and limit.
  const [first, ...rest] = prefixColumns.map((c, i) =>
    // biome-ignore lint/suspicious/noExplicitAny: see above
    tables.selectFrom(prefixMatches(from, c, term).as(`p${i}`) as any).selectAll(),
  );
  // biome-ignore lint/suspicious/noExplicitAny: see above
  let walks: SelectQueryBuilder<any, any, any> = first as SelectQueryBuilder<any, any, any>;
  for (const w of rest) walks = walks.unionAll(w);
  db = db.withoutPlugins();
  const bound = sql.lit(MATCH_COUNT_BOUND);
  const limit = sql.lit(SEARCH_LIMIT);
  const countOf = (cte: string) => sql<number>`(select count(*) from ${sql.table(cte)})`;
  // biome-ignore lint/suspicious/noExplicitAny: the rows of either table, as ids
  type Any = SelectQueryBuilder<any, any, any>;
  const newest = (q: Any): Any =>
    q.orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref('id'), 'desc').limit(limit);
  // biome-ignore lint/suspicious/noExplicitAny: the rows of either table, as ids
  const anyTables = tables as unknown as Kysely<any>;
  // A rank's rows: its CTE's newest when the CTE holds them all (no more than the bound), else the newest
  // matches read by the planner's choice (a walk of the newest rows when they are common).
  const byRank = (cte: string, match: Expression<SqlBool>) =>
    db
      .selectFrom(
        newest(db.selectFrom(cte).select(['id', 'created_at']).where(countOf(cte), '<=', bound)).as('k'),
      )
      .selectAll()
      .unionAll(
        // The condition outside the limited subquery, so it sits above the plan's Gather: inside, PostgreSQL
        // launched the parallel workers of a walk it then never ran (5-7 ms each, in every search).
        db
          .selectFrom(
            newest(
              anyTables
                .selectFrom(from)
                .select([sql.ref(`${alias}.id`).as('id'), sql.ref(`${alias}.created_at`).as('created_at')])
                .where(match),
            ).as('n'),
          )
          .selectAll()
          .where(countOf(cte), '>', bound),
      );
  const keptFound = newest(
    db
      .selectFrom(ctes.found)
      .select(['id', 'created_at'])
      .where(countOf(ctes.found), '<=', bound)
      .where(countOf(ctes.words), '<=', bound)
      .where(countOf(ctes.whole), '<=', bound),
  );
  const readContains: Any = db
    .selectFrom(contains.as('m'))
    .select(['m.id', 'm.created_at'])
    .where(countOf(ctes.found), '>', bound)
    .where(countOf(ctes.words), '<=', bound)
    .where(countOf(ctes.whole), '<=', bound);
  const ranked = (q: Any, r: number, as: string): Any =>
    db
      .selectFrom(q.as(as))
      .select([
        sql.ref(`${as}.id`).as('id'),
        sql.ref(`${as}.created_at`).as('created_at'),
        sql.lit(r).as('r'),
        sql<string>`null`.as('k'),
      ]);
  const others = db
    .selectFrom(keptFound.as('kf'))
    .selectAll()
    .unionAll(db.selectFrom(readContains.as('rc')).selectAll());
  // How many rows the ranks before hold (a row in several counted once): a rank is read only below 20.
  const fewerThanPage = (ctesBefore: string[]) =>
    sql<SqlBool>`(select count(*) from (${sql.join(
      ctesBefore.map((c) => sql`select id from ${sql.table(c)}`),
      sql` union `,
    )}) s) < ${limit}`;
  const every = db
    .selectFrom('pre')
    .select(['id', 'created_at', 'r', 'k'])
    .unionAll(ranked(db.selectFrom('by_whole').selectAll(), 2, 'bh'))
    .unionAll(
      db
        .selectFrom(ranked(db.selectFrom('by_words').selectAll(), 3, 'bw').as('w'))
        .selectAll()
        .where(fewerThanPage(['pre', 'by_whole'])) as never,
    )
    .unionAll(
      db
        .selectFrom(ranked(others, 4, 'o').as('m'))
        .selectAll()
        // In this order: by_words is not read (nor the words index) when the ranks before fill the page.
        .where(
          sql<SqlBool>`case when ${fewerThanPage(['pre', 'by_whole'])} then ${fewerThanPage(['pre', 'by_whole', 'by_words'])} else false end`,
        ) as never,
    );
  // A row found by several ranks (a title beginning with the term whose words do too) keeps its best.
  return db
    .with('pre', () => walks)
    .with('by_whole', () => byRank(ctes.whole, matching.whole))
    .with('by_words', () => byRank(ctes.words, matching.words))
    .selectFrom(every.as('e'))
    .select(['e.id', 'e.created_at', 'e.r', 'e.k'])
    .distinctOn('e.id')
    .orderBy('e.id')
    .orderBy('e.r')
    .orderBy('e.k');
}

/**
 * The CTE body of one table's matches, up to MATCH_COUNT_BOUND + 1 of them: every match (the rows of
 * `words`, and those containing the term), read only when `words` holds no more than the bound (else the
 * count is "more than" and the list's rank 2 is full). Counted by `boundedCount`; when they are all there, the list's matches
 * too, so a rare term's indexes are read once.
 */
const foundRows = (
  from: 'deals as d' | 'contacts as c',
  contains: Expression<SqlBool>,
  ctes: SearchCtes,
  /** The CTE of the rows containing the term over the trigram indexes (`containingRows`), when the term has trigrams. */
  containingCte?: string,
  /**
   * A large table's CTEs (`denseInNewest`, `newestContaining`): a term dense in the newest rows whose walk
   * finds more than the bound gives those rows, and the trigram indexes are not read.
   */
  walk?: { dense: string; walked: string },
) => {
  const { words, whole } = ctes;
  const alias = from.slice(-1);
  const bound = sql.lit(MATCH_COUNT_BOUND);
  const containing =
    containingCte === undefined
      ? tables
          // biome-ignore lint/suspicious/noExplicitAny: one helper for both tables
          .selectFrom(from as any)
          .select([sql.ref(`${alias}.id`).as('id'), sql.ref(`${alias}.created_at`).as('created_at')])
          .where(contains)
          .limit(sql.lit(MATCH_COUNT_BOUND + 1))
      : tables
          .selectFrom(`${containingCte} as cr` as never)
          .select(['cr.id', 'cr.created_at'] as never)
          .limit(sql.lit(MATCH_COUNT_BOUND + 1));
  // `words` holds every word match here (no more than the bound): the rows containing the term are read
  // without the words' test, which would compute each row's words where the index is not used.
  const every = tables
    .selectFrom(
      tables
        .selectFrom(`${words} as w` as never)
        .select(['w.id', 'w.created_at'] as never)
        .union(
          // biome-ignore lint/suspicious/noExplicitAny: see above
          tables.selectFrom(containing.as('ct') as any).select(['ct.id', 'ct.created_at'] as never),
        )
        .as('f') as never,
    )
    .selectAll()
    .where(sql<number>`(select count(*) from ${sql.table(whole)})`, '<=', bound)
    .where(sql<number>`(select count(*) from ${sql.table(words)})`, '<=', bound);
  if (!walk) return every.limit(sql.lit(MATCH_COUNT_BOUND + 1));
  // Both CTEs read once (each referenced twice); `walked` only when `dense`.
  const overBound = sql<SqlBool>`((select dense from ${sql.table(walk.dense)}) and (select count(*) from ${sql.table(walk.walked)}) > ${bound})`;
  return every
    .where(sql<SqlBool>`not ${overBound}`)
    .unionAll(
      tables
        .selectFrom(`${walk.walked} as wk` as never)
        .select(['wk.id', 'wk.created_at'] as never)
        .where(overBound) as never,
    )
    .limit(sql.lit(MATCH_COUNT_BOUND + 1));
};

/**
 * The CTE body of the rows whose words begin with the term's (the words index alone), up to
 * MATCH_COUNT_BOUND + 1 of them; not read when a prefix index alone holds more than the bound (`an`, a
 * hundred thousand words beginning with it): the count is then "more than" and the list full of prefix
 * matches, and the words index would give every row of a short common prefix before the first.
 */
const wordRows = (
  from: 'deals as d' | 'contacts as c',
  words: Expression<SqlBool>,
  most: string,
  unlessOver?: string,
  /** The gate of a term of several words (`possibleDeals`), tested last: read only when the rest hold. */
  possible: Expression<SqlBool> = sql<SqlBool>`true`,
) => {
  const alias = from.slice(-1);
  const guarded = unlessOver
    ? sql<SqlBool>`(select count(*) from ${sql.table(unlessOver)}) <= ${sql.lit(MATCH_COUNT_BOUND)}`
    : sql<SqlBool>`true`;
  return (
    tables
      // biome-ignore lint/suspicious/noExplicitAny: one helper for both tables
      .selectFrom(from as any)
      .select([sql.ref(`${alias}.id`).as('id'), sql.ref(`${alias}.created_at`).as('created_at')])
      .where(words)
      .where(sql<number>`(select n from ${sql.table(most)})`, '<=', sql.lit(MATCH_COUNT_BOUND))
      .where(guarded)
      .where(possible)
      .limit(sql.lit(MATCH_COUNT_BOUND + 1))
  );
};

/**
 * The pattern as the planner cannot see it (an init plan's value): its selectivity is then PostgreSQL's
 * default for a pattern match (0.5%), not one drawn from the column's statistics, which are every
 * organization's. A term common in another organization was planned as common here too: `acme`, in 33,000
 * e-mails of another organization's million contacts and in none of this one's, was counted by a
 * sequential scan stopping at the bound's next match, which read every organization's 2 million contacts
 * (0.87 s; docs/development.md, Two large organizations in one database). The trigram indexes read only
 * what matches here.
 */
const unseenPattern = (pattern: unknown) => sql<string>`(select ${pattern}::text)`;

/** How many of a term's trigrams one read of a trigram index looks up (`holdsTrigrams`). */
const TRIGRAM_KEYS = 8;

/**
 * The term's trigram keys: up to TRIGRAM_KEYS patterns (`%abc%`) of its runs of three letters or digits,
 * each once (a repeat is one more condition to plan and test), the first, the last and evenly between when
 * more; none when it has no such run (`an`, `a b`: the trigram indexes would read every entry). Each is a
 * substring of the term as typed, so a value containing the term (case-insensitively, as ILIKE compares)
 * contains each; and each is one trigram of pg_trgm. Read by `holdsTrigrams`.
 */
export function trigramKeys(q: string): TrigramKeys | undefined {
  const chars = Array.from(q);
  const runs = new Map<string, string>();
  for (let i = 0; i + 3 <= chars.length; i++) {
    const run = chars.slice(i, i + 3).join('');
    // Once whatever its case: ILIKE reads `Per` and `per` alike. Not one with Σ: an ICU database
    // lower-cases it by what follows (σ, or ς at a word's end), so alone it may not be a part of the term.
    if (/^[\p{L}\p{N}]{3}$/u.test(run) && !run.includes('Σ') && !runs.has(run.toLowerCase()))
      runs.set(run.toLowerCase(), run);
  }
  const each = [...runs.values()];
  if (each.length === 0) return undefined;
  const n = Math.min(TRIGRAM_KEYS, each.length);
  return Object.fromEntries(
    Array.from({ length: n }, (_, j) => [
      `k${j + 1}`,
      `%${each[n === 1 ? 0 : Math.floor((j * (each.length - 1)) / (n - 1))]}%`,
    ]),
  );
}

/** A term's trigram keys by name (`k1`…): one argument of a prepared query (`prepareQuery`), its fields each a value. */
type TrigramKeys = Record<string, string>;

/**
 * `value` contains each of `keys` (`trigramKeys`, as `unseenPattern`s: the indexes whatever the
 * planner's statistics), each its own condition: one key of the trigram index each. A pattern's trigrams
 * in one condition are one key, whose rarest trigram's rows are each looked up in every other trigram's
 * postings: `%person999993@%` read the whole posting lists of `per`, `ers`, `rso`, `son` (in every e-mail
 * of a million contacts), 2,001 pages, 24 ms; as keys of their own, the index intersects them by
 * skipping, 160 pages, 2.3 ms (docs/development.md, issue 33).
 */
const holdsTrigrams = (value: Expression<string>, keys: Array<string | Expression<string>>) =>
  sql<SqlBool>`(${sql.join(
    keys.map((k) => sql`${value} ilike ${k}`),
    sql` and `,
  )})`;

/**
 * The rows of `from` (as its alias: id, created_at and the searched columns) that may match a term: a
 * searched column holding each of its trigram keys (`holdsTrigrams`; containing `pattern` when it has
 * none), or, with `words`, each word of the term beginning one of theirs: read over the trigram and words
 * indexes. In an `offset 0` subquery, whose conditions are never tested on the rows found nor joined with
 * the caller's: the caller tests the whole match on the rows it gives (`containsIn`, `contactMatches`).
 */
const mayMatch = (
  from: 'deals as d' | 'contacts as c' | 'companies as co',
  term: { words?: string | Expression<string> | undefined } & (
    | { keys: Array<string | Expression<string>> }
    | { keys?: undefined; pattern: string | Expression<string> }
  ),
) => {
  const alias = from.split(' as ')[1] as keyof typeof SEARCHED;
  return (
    tables
      // biome-ignore lint/suspicious/noExplicitAny: one helper for every searched table
      .selectFrom(from as any)
      .select([`${alias}.id`, `${alias}.created_at`, ...SEARCHED[alias].map((c) => `${alias}.${c}`)] as never)
      .where(
        sql<SqlBool>`(${
          term.keys === undefined
            ? containsIn(alias, term.pattern)
            : sql.join(
                SEARCHED[alias].map((c) => holdsTrigrams(sql.ref(`${alias}.${c}`), term.keys)),
                sql` or `,
              )
        } or ${term.words === undefined ? sql`false` : wordsMatch(alias, term.words)})`,
      )
      .offset(sql.lit(0))
      .as(alias)
  );
};

/**
 * The CTE body of the rows of `from` containing the term: every one, read by its trigram keys
 * (`mayMatch`), `contains` tested on the rows found. Materialized, so planned for all its rows and read
 * lazily: `foundRows` takes up to MATCH_COUNT_BOUND + 1.
 */
const containingRows = (
  from: 'deals as d' | 'contacts as c',
  keys: Expression<string>[],
  contains: Expression<SqlBool>,
) => {
  const alias = from.slice(-1);
  return (
    tables
      // biome-ignore lint/suspicious/noExplicitAny: one helper for both tables
      .selectFrom(mayMatch(from, { keys }) as any)
      .select([sql.ref(`${alias}.id`).as('id'), sql.ref(`${alias}.created_at`).as('created_at')])
      .where(contains)
  );
};

/**
 * How many of a table's newest rows tell a term's density (`denseInNewest`), how many of them containing
 * it make it dense (a walk then finds the bound's next match within ten times the bound's rows), and how
 * many rows a dense term's count walks at most (`newestContaining`: a tenth of them holding it is enough).
 */
const DENSITY_WINDOW = 200;
const DENSE_IN_WINDOW = 20;
const DENSE_WALK = 10_000;

/** The newest `n` rows of `from`, as its alias: id, created_at and the searched columns (`SEARCHED`). */
const newestRows = (from: 'deals as d' | 'contacts as c' | 'companies as co', n: number) => {
  const alias = from.split(' as ')[1] as keyof typeof SEARCHED;
  return (
    tables
      // biome-ignore lint/suspicious/noExplicitAny: one helper for every searched table
      .selectFrom(from as any)
      .select([`${alias}.id`, `${alias}.created_at`, ...SEARCHED[alias].map((c) => `${alias}.${c}`)] as never)
      .orderBy(sql.ref(`${alias}.created_at`), 'desc')
      .orderBy(sql.ref(`${alias}.id`), 'desc')
      .limit(sql.lit(n))
      .as(alias)
  );
};

/**
 * The CTE body of one row, `dense`: whether DENSE_IN_WINDOW of the DENSITY_WINDOW newest rows of `from`
 * contain the pattern. The planner's statistics are every organization's; these rows are this one's.
 */
const denseInNewest = (
  from: 'deals as d' | 'contacts as c' | 'companies as co',
  pattern: string | Expression<string>,
) =>
  tables
    .selectFrom(newestRows(from, DENSITY_WINDOW) as never)
    .select(sql<boolean>`count(*) >= ${sql.lit(DENSE_IN_WINDOW)}`.as('dense'))
    .where(containsIn(from.split(' as ')[1] as keyof typeof SEARCHED, pattern));

/**
 * The CTE body of the rows containing the pattern among the DENSE_WALK newest of `from`, up to
 * MATCH_COUNT_BOUND + 1: a dense term's bound reached by walking (`foundRows`), where the trigram indexes
 * would give every row holding its trigrams before the first (`erso` in a million "Person <i>": 0.6 s).
 */
const newestContaining = (from: 'deals as d' | 'contacts as c', pattern: string | Expression<string>) => {
  const alias = from.slice(-1) as 'd' | 'c';
  return tables
    .selectFrom(newestRows(from, DENSE_WALK) as never)
    .select([sql.ref(`${alias}.id`).as('id'), sql.ref(`${alias}.created_at`).as('created_at')])
    .where(containsIn(alias, pattern))
    .limit(sql.lit(MATCH_COUNT_BOUND + 1));
};

const DEAL_CTES: SearchCtes = {
  found: 'deals_found',
  words: 'deals_words',
  whole: 'deals_whole',
  most: 'deals_most',
};
const CONTACT_CTES: SearchCtes = {
  found: 'contacts_found',
  words: 'contacts_words',
  whole: 'contacts_whole',
  most: 'contacts_most',
};

const searchedDeals = () =>
  tables.selectFrom('deals as d').select(['d.id', 'd.title', 'd.company_name', 'd.created_at']);

const searchedContacts = () =>
  tables.selectFrom('contacts as c').select(['c.id', 'c.name', 'c.email', 'c.title', 'c.created_at']);

type DealRow = InferResult<ReturnType<typeof searchedDeals>>[number];
type ContactRow = InferResult<ReturnType<typeof searchedContacts>>[number];

/** A deal's (as `d`) whole searched text: the `deals_search_text` index's expression (Migration20261204000100). */
const DEAL_TEXT = sql<string>`(coalesce(d.title, '') || ' ' || coalesce(d.company_name, ''))`;

/** How many of a term's words the gate reads at most: the longest (the more trigrams, the fewer rows). */
const GATE_WORDS = 4;

/**
 * The CTE body of the gate's words (`w`, one row, an array): the term's own words as the words index
 * reads them (`to_tsvector('simple', q)`: the lexemes `plainto_tsquery` makes of it, lower-cased
 * substrings of the term), those with a run of three letters or digits (a trigram to look up), the longest
 * GATE_WORDS. Every rule's match holds each: a value equal to the term, beginning with it or containing it
 * holds all of the term, and a deal whose words begin with the term's holds each of them. Words taken from
 * the term's text by another rule would not do: the parser drops some tokens (`https` of a URL, `<b>`)
 * and splits others (`1e5abc` is `1e5` and `abc`), so a deal could match without holding them.
 */
const gateWords = (words: Expression<string>) =>
  sql<string[]>`array(select w from unnest(tsvector_to_array(to_tsvector('simple', ${words}))) w
    where w ~ '[[:alnum:]]{3}' order by length(w) desc, w limit ${sql.lit(GATE_WORDS)})`;

/** A gate word as a `%word%` pattern, LIKE's own wildcards escaped (`likePattern`'s rule, in SQL). */
const gatePattern = (word: Expression<string>) =>
  sql<string>`'%' || replace(replace(replace(${word}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/**
 * The CTE body of the deals holding each of the gate's words (`deals_gate_words`) in their searched text,
 * read from `deals_search_text` (the patterns computed in the statement, so planned as rare: the index,
 * not a walk that filters rows; materialized, so `possibleDeals` stops at its first row). Fewer words than
 * GATE_WORDS repeat the first.
 */
const gateRows = () =>
  tables
    .selectFrom('deals as d')
    .select(sql.lit(1).as('one'))
    .where(
      sql<SqlBool>`${sql.join(
        Array.from(
          { length: GATE_WORDS },
          (_, i) =>
            sql`${DEAL_TEXT} ilike (select ${gatePattern(sql`coalesce(w[${sql.lit(i + 1)}], w[1])`)} from deals_gate_words)`,
        ),
        sql` and `,
      )}`,
    );

/**
 * Whether any deal can match a term of several words (`deals_possible`, one row `p`): when none holds each
 * of its words, the words index's prefixes and the trigram indexes are not read. Tested after the whole
 * words are counted (none of them, or the term is not gated), so a term whose words stand together in many
 * rows never reads it.
 */
const possibleDeals = sql<SqlBool>`(select p from deals_possible)`;

/**
 * The companies matching a search, best first (a name or domain equal to the term, then a name beginning
 * with it, then the newest of the rest), and how many matched, counted up to MATCH_COUNT_BOUND + 1: two
 * columns of the search's one statement. Read over the trigram indexes and sorted: an organization's
 * companies are far fewer than its deals (docs/api/companies.md says up to which size this holds).
 */
const companyColumns = (q: string, pattern: string, words: string | undefined) => {
  const rank = sql<number>`case when lower(co.name) = lower(${q}) or co.domain = lower(${q}) then 0
    when lower(co.name) collate "C" >= lower(${q}) and lower(co.name) collate "C" < lower(${q}) || chr(1114111) then 1
    else 2 end`;
  return [
    sql<unknown>`(select coalesce(json_agg(x order by x.r, x.created_at desc, x.id desc), '[]'::json) from ${tables
      .selectFrom('companies as co')
      .select(['co.id', 'co.name', 'co.domain', 'co.industry', 'co.custom', 'co.created_at', rank.as('r')])
      .where(companyMatches(pattern, words))
      .orderBy(rank)
      .orderBy('co.created_at', 'desc')
      .orderBy('co.id', 'desc')
      .limit(sql.lit(SEARCH_LIMIT))
      .as('x')})`.as('companies'),
    sql<string>`(select count(*) from ${tables
      .selectFrom('companies as co')
      .select(sql.lit(1).as('one'))
      .where(companyMatches(pattern, words))
      .limit(sql.lit(MATCH_COUNT_BOUND + 1))
      .as('m')})`.as('companies_matched'),
  ] as const;
};

/**
 * Both lists and both counts in one statement: each list its ranked matches (`rankedMatches`), cut at
 * SEARCH_LIMIT, the deal's stage and the contact's deal joined to the rows found (left joins: each row has
 * its one, in the same organization); each count up to MATCH_COUNT_BOUND + 1.
 */
const searchBuild =
  (large: { deals: boolean; contacts: boolean }) =>
  (
    db: Kysely<Tables>,
    a: { q: string; pattern: string; words?: string; keys?: TrigramKeys; window: number },
  ) => {
    const term = sql<string>`${a.q}`;
    // The gate for the deals, when the term has words (`possibleDeals`).
    const possible = a.words === undefined ? undefined : possibleDeals;
    const best = (ranked: ReturnType<typeof rankedMatches>) =>
      tables
        // biome-ignore lint/suspicious/noExplicitAny: the ranked rows of either table
        .selectFrom(ranked.as('x') as any)
        .selectAll()
        .orderBy('x.r' as never)
        .orderBy('x.k' as never)
        .orderBy('x.created_at' as never, 'desc')
        .orderBy('x.id' as never, 'desc')
        .limit(sql.lit(SEARCH_LIMIT));
    const deals = best(
      rankedMatches(
        db,
        'deals as d',
        ['title', 'company_name'],
        term,
        { whole: wholeWordsMatch('d', a.words), words: wordsMatch('d', a.words) },
        newestMatches<DealRow>(
          db,
          large.deals,
          'd',
          searchedDeals(),
          containsIn('d', a.pattern),
          a.window,
        ) as never,
        DEAL_CTES,
      ),
    );
    const contacts = best(
      rankedMatches(
        db,
        'contacts as c',
        ['name'],
        term,
        { whole: wholeWordsMatch('c', a.words), words: wordsMatch('c', a.words) },
        newestMatches<ContactRow>(
          db,
          large.contacts,
          'c',
          searchedContacts(),
          containsIn('c', a.pattern),
          a.window,
        ) as never,
        CONTACT_CTES,
      ),
    );
    // The rows containing the term, over the trigram indexes (`containingRows`), when it has trigrams.
    const keys = a.keys && Object.values(a.keys).map(unseenPattern);
    // The counts by prefix and by whole words first: the gate reads `deals_whole`, and the rows
    // containing the term read the gate.
    const counted = db
      .with('deals_most', (qc) =>
        qc.selectNoFrom(sql<number>`${mostByPrefix('deals as d', ['title', 'company_name'], term)}`.as('n')),
      )
      .with('contacts_most', (qc) =>
        qc.selectNoFrom(sql<number>`${mostByPrefix('contacts as c', ['name'], term)}`.as('n')),
      )
      .with('deals_whole', () => wordRows('deals as d', wholeWordsMatch('d', a.words), 'deals_most'))
      .with('contacts_whole', () =>
        wordRows('contacts as c', wholeWordsMatch('c', a.words), 'contacts_most'),
      ) as unknown as typeof db;
    const gated = (
      a.words === undefined
        ? counted
        : counted
            .with('deals_gate_words', (qc) => qc.selectNoFrom(gateWords(sql`${a.words}`).as('w')))
            .with(
              (cte) => cte('deals_possible_rows').materialized(),
              () => gateRows(),
            )
            // A term of fewer than two gate words is not gated; rows holding the words whole hold each of
            // them: the gate's index is read only when neither holds.
            .with('deals_possible', (qc) =>
              qc.selectNoFrom(
                sql<boolean>`case when (select cardinality(w) from deals_gate_words) < 2 then true
                  when (select count(*) from deals_whole) > 0 then true
                  else exists (select 1 from deals_possible_rows) end`.as('p'),
              ),
            )
    ) as typeof db;
    const withContaining = (
      keys === undefined
        ? gated
        : gated
            .with(
              (cte) => cte('deals_containing').materialized(),
              () =>
                containingRows('deals as d', keys, containsIn('d', a.pattern)).where(
                  possible ?? sql<SqlBool>`true`,
                ),
            )
            .with(
              (cte) => cte('contacts_containing').materialized(),
              () => containingRows('contacts as c', keys, containsIn('c', a.pattern)),
            )
    ) as typeof db;
    const containingCte = (table: string) => (keys === undefined ? undefined : `${table}_containing`);
    // A large table's term with trigrams: dense in the newest rows, its bound is reached by walking them.
    const walk = (table: 'deals' | 'contacts') =>
      keys === undefined || !large[table]
        ? undefined
        : { dense: `${table}_dense`, walked: `${table}_walked` };
    const withWalk = (q: typeof db, table: 'deals' | 'contacts') => {
      const from = `${table} as ${table[0]}` as 'deals as d';
      return walk(table) === undefined
        ? q
        : (q
            .with(`${table}_dense`, () => denseInNewest(from, a.pattern))
            .with(
              (cte) => cte(`${table}_walked`).materialized(),
              () => newestContaining(from, a.pattern),
            ) as unknown as typeof db);
    };
    const walked = withWalk(withWalk(withContaining, 'deals'), 'contacts');
    return walked
      .with('deals_words', () =>
        wordRows('deals as d', wordsMatch('d', a.words), 'deals_most', 'deals_whole', possible),
      )
      .with('contacts_words', () =>
        wordRows('contacts as c', wordsMatch('c', a.words), 'contacts_most', 'contacts_whole'),
      )
      .with('deals_found', () =>
        foundRows('deals as d', containsIn('d', a.pattern), DEAL_CTES, containingCte('deals'), walk('deals')),
      )
      .with('contacts_found', () =>
        foundRows(
          'contacts as c',
          containsIn('c', a.pattern),
          CONTACT_CTES,
          containingCte('contacts'),
          walk('contacts'),
        ),
      )
      .selectNoFrom((eb) => [
        rankedAsJson(
          eb
            // biome-ignore lint/suspicious/noExplicitAny: the ranked ids
            .selectFrom(deals.as('x') as any)
            .innerJoin('deals as d', 'd.id', 'x.id' as never)
            .leftJoin('pipeline_stages as s', 's.id', 'd.stage_id')
            .select([
              'd.id',
              'd.title',
              'd.company_name',
              's.name as stage',
              'd.value',
              'd.deal_health',
              'd.win_probability',
              'd.custom',
              'x.created_at' as never,
              'x.r' as never,
              'x.k' as never,
            ]),
        ).as('deals'),
        rankedAsJson(
          eb
            // biome-ignore lint/suspicious/noExplicitAny: the ranked ids
            .selectFrom(contacts.as('x') as any)
            .innerJoin('contacts as c', 'c.id', 'x.id' as never)
            .leftJoin('deals as d', 'd.id', 'c.deal_id')
            .select([
              'c.id',
              'c.name',
              'c.email',
              'c.title',
              'c.role_type',
              'c.deal_id',
              'd.title as deal_title',
              'd.company_name as company',
              'c.custom',
              'x.created_at' as never,
              'x.r' as never,
              'x.k' as never,
            ]),
        ).as('contacts'),
        boundedCount(DEAL_CTES).as('deals_matched'),
        boundedCount(CONTACT_CTES).as('contacts_matched'),
        ...companyColumns(a.q, a.pattern, a.words),
      ]);
  };

const searchBoth = (large: { deals: boolean; contacts: boolean }) => orgQuery(searchBuild(large));

/** The compiled search statements of `searchSql`, by organization and plan, with stand-ins for the term. */
const compiledSearches = new LRUCache<string, { sql: string; parameters: readonly unknown[] }>({
  max: 1_000,
});
const STAND_IN = {
  q: '\u0000q',
  pattern: '\u0000pattern',
  words: '\u0000words',
  window: -271_828,
} as const;
/** The stand-in of a trigram key (`trigramKeys`' `k1`…): as many as the term has. */
const keyStandIn = (name: string) => `\u0000${name}`;

/**
 * The search's statement for one organization as SQL text and parameters (the organization's id among
 * them), the plan picked as `search` picks it: what the bench's baseline runs without the framework
 * (apps/bench/src/baseline-server.ts), so the two compare the same database work. Compiled once per
 * organization and plan, as the service compiles once per plan.
 */
export function searchSql(
  orgId: string,
  q: string,
  large: { deals: boolean; contacts: boolean },
  newestWindow: number,
) {
  const words = wordsOf(q);
  const keys = trigramKeys(q);
  const key = `${orgId}/${large.deals}/${large.contacts}/${words !== undefined}/${Object.keys(keys ?? {}).length}`;
  let compiled = compiledSearches.get(key);
  if (!compiled) {
    const args = {
      ...STAND_IN,
      words: words === undefined ? undefined : STAND_IN.words,
      keys: keys && Object.fromEntries(Object.keys(keys).map((name) => [name, keyStandIn(name)])),
    };
    compiled = searchBuild(large)(compileOnlyOrgDb(orgId), args).compile();
    compiledSearches.set(key, compiled);
  }
  const value = new Map<unknown, unknown>([
    [STAND_IN.q, q],
    [STAND_IN.pattern, likePattern(q)],
    [STAND_IN.words, words],
    ...Object.entries(keys ?? {}).map(([name, k]) => [keyStandIn(name), k] as const),
    [STAND_IN.window, newestWindow],
  ]);
  return { sql: compiled.sql, parameters: compiled.parameters.map((p) => (value.has(p) ? value.get(p) : p)) };
}

/** The four statements, by which of the two tables is large (`deals/contacts`). */
const SEARCHES = new Map<string, ReturnType<typeof searchBoth>>(
  [false, true].flatMap((deals) =>
    [false, true].map((contacts) => [`${deals}/${contacts}`, searchBoth({ deals, contacts })] as const),
  ),
);

/** The organization's kept deal and contact counts. */
const keptSizes = orgQuery((db) =>
  db.selectNoFrom((eb) =>
    (['deal_counts', 'contact_counts', 'company_counts'] as const).map((table) =>
      eb
        .selectFrom(table)
        .select((k) => k.fn.sum<string | null>('n').as('n'))
        .as(table),
    ),
  ),
);

type KeptSize = { deals: number; contacts: number; companies: number };
const sizes = new LRUCache<string, KeptSize>({ max: 10_000, ttl: SIZE_TTL_MS });

/** The organization's deal, contact and company counts, read at most once a minute per process (they pick plans). */
async function keptSize(em: EntityManager): Promise<KeptSize> {
  const org = currentOrg(em);
  const known = sizes.get(org);
  if (known) return known;
  const [row] = await keptSizes(em, {});
  const size = {
    deals: Number(row?.deal_counts ?? 0),
    contacts: Number(row?.contact_counts ?? 0),
    companies: Number(row?.company_counts ?? 0),
  };
  sizes.set(org, size);
  return size;
}

/** Which of the organization's deals and contacts a search reads as a large organization's (`newestMatches`). */
export async function largeTables(em: EntityManager, plainUpTo: number) {
  const size = await keptSize(em);
  return { deals: size.deals > plainUpTo, contacts: size.contacts > plainUpTo };
}

/** A result's custom values (issue 29: `custom` on every search result), `{}` when it holds none. */
const customOf = (row: Record<string, unknown>) => (row.custom ?? {}) as Record<string, unknown>;

/** A bounded count as an answer: exact up to MATCH_COUNT_BOUND, else "more than" it. */
export function matchedOf(counted: unknown) {
  const n = Number(counted ?? 0);
  return n > MATCH_COUNT_BOUND ? { total: MATCH_COUNT_BOUND, exact: false } : { total: n, exact: true };
}

/** A list `pageByQ` reads: contacts or companies, as its own service answers them. */
interface ListedByQ<Row, Dto> {
  table: 'contacts' | 'companies';
  alias: 'c' | 'co';
  what: string;
  /** The rows a page answers (FROM with its joins and columns). */
  rows: (db: Kysely<Tables>) => SelectQueryBuilder<Tables, never, Row>;
  /** `q`'s condition: `contactMatches`, `companyMatches`. */
  matches: (
    pattern: string | Expression<string>,
    words: string | Expression<string> | undefined,
  ) => Expression<SqlBool>;
  /** The counts the database keeps of the table. */
  counts: 'contact_counts' | 'company_counts';
  toDto: (row: Row) => Dto;
}

/** A list's term as `pageByQ` reads it: `likePattern`, `wordsOf`, `trigramKeys`. */
type ByQ = { pattern: string; words?: string | undefined; keys?: TrigramKeys | undefined };

/**
 * What `pageByQ` reads a list with: its page (by `q`'s condition, or by the ids of its few matches), `q`'s
 * matches counted up to MATCH_COUNT_BOUND + 1, their ids read over the indexes, and the kept count.
 */
export interface ListByQ<Row, Dto> extends ListedByQ<Row, Dto> {
  page: (
    em: EntityManager,
    a: { pattern?: string; words?: string; ids?: string[]; after?: string; limit: number; offset: number },
  ) => Promise<Row[]>;
  matchCount: (
    em: EntityManager,
    a: { pattern: string; words?: string | undefined },
  ) => Promise<Array<{ total: unknown }>>;
  matchedIds: (em: EntityManager, a: ByQ) => Promise<Array<{ id: unknown }>>;
  countOrIds: (
    em: EntityManager,
    a: ByQ & { keys: TrigramKeys },
  ) => Promise<Array<{ total: unknown; ids: unknown }>>;
  keptCount: (em: EntityManager, a: Record<string, never>) => Promise<Array<{ total: unknown }>>;
}

export function listByQ<Row, Dto>(list: ListedByQ<Row, Dto>): ListByQ<Row, Dto> {
  const { alias } = list;
  const id = sql.ref(`${alias}.id`);
  const from = `${list.table} as ${alias}` as 'contacts as c';
  /** `q`'s matches counted up to the bound's next match, planned with the term's values (`matchCount`). */
  const counted = (a: { pattern: string; words?: string | undefined }) =>
    tables
      .selectFrom(
        tables
          .selectFrom(from)
          .select(sql.lit(1).as('one'))
          .where(list.matches(a.pattern, a.words))
          .limit(sql.lit(MATCH_COUNT_BOUND + 1))
          .as('m'),
      )
      .select((eb) => eb.fn.countAll<string>().as('total'));
  /** The CTE body of `q`'s matches' ids, read over the indexes whatever the statistics (`matchedIds`). */
  const matched = (a: ByQ) =>
    tables
      .selectFrom(
        mayMatch(from, {
          ...(a.keys
            ? { keys: Object.values(a.keys).map(unseenPattern) }
            : { pattern: unseenPattern(a.pattern) }),
          words: a.words === undefined ? undefined : unseenPattern(a.words),
        }) as never,
      )
      .select(id.as('id'))
      .where(list.matches(a.pattern, a.words));
  return {
    ...list,
    page: orgQuery(
      (
        db,
        a: {
          pattern?: string;
          words?: string;
          ids?: string[];
          after?: string;
          limit: number;
          offset: number;
        },
      ) => {
        let page = list.rows(db);
        if (a.ids) page = page.where(sql<SqlBool>`${id} = any(${a.ids}::uuid[])`);
        else if (a.pattern) page = page.where(list.matches(a.pattern, a.words));
        if (a.after) page = page.where(afterAnchor(list, a.after));
        return page
          .orderBy(sql.ref(`${alias}.created_at`), 'desc')
          .orderBy(id, 'desc')
          .limit(a.limit)
          .offset(a.offset);
      },
    ),
    /**
     * Planned with the term's values: a common term walks the rows and stops at the bound's next match.
     * Not by its trigram keys (`mayMatch`): their conditions' estimates cost the planner 12 ms (three
     * columns of four keys, `person`), and a walk tests each of them on each row.
     */
    matchCount: orgQuery((db, a: { pattern: string; words?: string | undefined }) =>
      db.selectFrom(counted(a).as('n')).select('n.total'),
    ),
    /**
     * The ids of `q`'s matches, up to MATCH_COUNT_BOUND + 1, read over the trigram and words indexes
     * whatever the planner's statistics (`mayMatch`, `unseenPattern`; materialized: planned for all its
     * rows).
     */
    matchedIds: orgQuery((db, a: ByQ) =>
      db
        .with(
          (cte) => cte('matched').materialized(),
          () => matched(a),
        )
        .selectFrom('matched')
        .select('matched.id')
        .limit(sql.lit(MATCH_COUNT_BOUND + 1)),
    ),
    /**
     * A term with trigram keys, by its density in the newest rows (`denseInNewest`): a dense term's
     * matches counted as `matchCount` does (`total`; a walk that stops at the bound's next match), a
     * sparse one's ids read over the indexes (`ids`, up to MATCH_COUNT_BOUND + 1, as `matchedIds`): they
     * are its count and its page. The whole pattern planned as rare was one GIN key,
     * whose postings were intersected row by row (`holdsTrigrams`): `person999993@` counted in ~40 ms at
     * a million contacts. The planner's statistics are every organization's; the window is this one's.
     */
    countOrIds: orgQuery((db, a: ByQ & { keys: TrigramKeys }) =>
      db
        .with('dense', () => denseInNewest(from, a.pattern))
        .with(
          (cte) => cte('matched').materialized(),
          () => matched(a),
        )
        .selectNoFrom([
          sql<string | null>`case when (select dense from dense) then (${counted(a)}) end`.as('total'),
          sql<
            string[] | null
          >`case when not (select dense from dense) then array(select id::text from matched limit ${sql.lit(MATCH_COUNT_BOUND + 1)}) end`.as(
            'ids',
          ),
        ]),
    ),
    keptCount: orgQuery((db) =>
      db.selectFrom(list.counts).select((eb) => eb.fn.sum<string | null>('n').as('total')),
    ),
  };
}

/**
 * The most rows `pageByQ` walks, newest first, to fill a page of `q`'s matches (expected from their
 * count and the table's kept size, `keptSize`): beyond, their ids are read over the indexes. 1,000 matches of 10,000 contacts
 * fill a page of 20 in 210 rows walked, where a page by 1,000 ids reads and sorts them all. Fewer when
 * search's own plain query is held to fewer rows (CRM_SEARCH_PLAIN_UP_TO, which the tests set to 0).
 */
const WALK_UP_TO = 10_000;

/**
 * GET /contacts and GET /companies without filter, sort or view: a page newest first, by offset or after a
 * cursor; without `q` the total is the kept count, with it the matches counted up to MATCH_COUNT_BOUND
 * (beyond, `total` is the bound and `total_exact` false, present only then). When the count is exact
 * (MATCH_COUNT_BOUND matches at most) and the matches are sparse (`WALK_UP_TO`), the page is read by their
 * ids, read over the indexes: the newest rows walked until a page of matches is found would read a
 * million-contact organization to its end for a term that few or none of them hold (3-6 s,
 * docs/development.md). Dense matches are found early in the walk.
 */
export async function pageByQ<Row, Dto extends { id: string }>(
  em: EntityManager,
  list: ListByQ<Row, Dto>,
  query: { q?: string | undefined; after?: string | undefined; limit: number; offset: number },
  { plainUpTo }: { plainUpTo: number },
) {
  await checkCursor(em, { table: list.table, what: list.what }, query);
  const { after, offset } = query;
  const limit = query.limit + 1;
  let rows: Row[];
  let total: number;
  let exact = true;
  if (!query.q) {
    const [page, [kept]] = await Promise.all([
      list.page(em, { after, limit, offset }),
      list.keptCount(em, {}),
    ]);
    rows = page;
    total = Number(kept?.total ?? 0);
  } else {
    const pattern = likePattern(query.q);
    const words = wordsOf(query.q);
    const keys = trigramKeys(query.q);
    const size = await keptSize(em);
    const walkUpTo = Math.min(WALK_UP_TO, plainUpTo);
    // Beyond the rows a walk reads cheaply, a term with trigram keys is counted, or its ids read, by its
    // density (`countOrIds`).
    const [counted] =
      keys && size[list.table] > walkUpTo
        ? await list.countOrIds(em, { pattern, words, keys })
        : await list.matchCount(em, { pattern, words });
    let ids = (counted as { ids?: string[] | null } | undefined)?.ids ?? undefined;
    ({ total, exact } = matchedOf(ids ? ids.length : counted?.total));
    // How many rows the walk would read to fill the page, were the matches spread evenly.
    const walked = ((offset + limit) * size[list.table]) / Math.max(total, 1);
    if (!exact || walked <= walkUpTo) ids = undefined;
    else ids ??= (await list.matchedIds(em, { pattern, words, keys })).map((r) => r.id as string);
    rows =
      ids?.length === 0
        ? []
        : await list.page(em, ids ? { ids, after, limit, offset } : { pattern, words, after, limit, offset });
  }
  const data = rows.slice(0, query.limit).map(list.toDto);
  return {
    data,
    meta: {
      total,
      // Only when more than the bound matched: an exact total's meta is as it always was.
      ...(exact ? {} : { total_exact: false }),
      limit: query.limit,
      offset: query.offset,
      next_cursor: rows.length > query.limit ? (data.at(-1)?.id ?? null) : null,
    },
  };
}

/**
 * Search, best first (docs/api/lists-and-search.md: Search): per list, the values equal to the term, then
 * those that begin with it (titles and company names, contact names; read down the prefix indexes), then
 * the newest of those that contain it anywhere (title, company; name, e-mail, contact title). Matches inside
 * a value are read as before: up to `plainUpTo` rows a table with the plain query, the planner free to
 * pick a trigram index or a walk; beyond, its `newestWindow` newest rows first (`newestMatches`). Both
 * lists and their bounded counts (and the companies', `companyColumns`) in one statement: a round trip less (see docs/development.md, What made
 * the difference).
 */
export async function search(
  em: EntityManager,
  q: string,
  { plainUpTo, newestWindow }: { plainUpTo: number; newestWindow: number },
) {
  const large = await largeTables(em, plainUpTo);
  const statement = SEARCHES.get(`${large.deals}/${large.contacts}`) as ReturnType<typeof searchBoth>;
  const pattern = likePattern(q);
  const [row] = await statement(em, {
    q,
    pattern,
    words: wordsOf(q),
    keys: trigramKeys(q),
    window: newestWindow,
  });
  const companies = asJson<Record<string, unknown>[]>(row?.companies ?? '[]');
  const deals = asJson<Record<string, unknown>[]>(row?.deals ?? '[]');
  const contacts = asJson<Record<string, unknown>[]>(row?.contacts ?? '[]');
  return {
    data: {
      deals: deals.map((d) => ({
        id: d.id as string,
        title: d.title as string,
        company_name: (d.company_name as string | null) ?? null,
        stage: (d.stage as string | null) ?? null,
        value: d.value == null ? null : Number(d.value),
        health: (d.deal_health as string | null) ?? null,
        win_probability: (d.win_probability as number | null) ?? null,
        custom: customOf(d),
      })),
      contacts: contacts.map((c) => ({
        id: c.id as string,
        name: c.name as string,
        email: (c.email as string | null) ?? null,
        title: (c.title as string | null) ?? null,
        role_type: (c.role_type as string | null) ?? null,
        deal_id: (c.deal_id as string | null) ?? null,
        deal_title: (c.deal_title as string | null) ?? null,
        company: (c.company as string | null) ?? null,
        custom: customOf(c),
      })),
      // Only when a company matched: a search of an organization without companies answers as before.
      ...(companies.length > 0
        ? {
            companies: companies.map((c) => ({
              id: c.id as string,
              name: c.name as string,
              domain: (c.domain as string | null) ?? null,
              industry: (c.industry as string | null) ?? null,
              custom: customOf(c),
            })),
          }
        : {}),
    },
    meta: {
      deals: matchedOf(row?.deals_matched),
      contacts: matchedOf(row?.contacts_matched),
      ...(companies.length > 0 ? { companies: matchedOf(row?.companies_matched) } : {}),
      count_bound: MATCH_COUNT_BOUND,
    },
  };
}
