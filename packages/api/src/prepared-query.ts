import { type EntityManager, reusePlan, sqlOf, type Tables } from '@crm/db';
import { type Compilable, CompiledQuery, type Kysely, type KyselyPlugin } from 'kysely';

/** Where a prepared query's argument goes, until a call puts its value there: `name`, or `name.field` of a row. */
class Arg {
  readonly name: string;
  readonly field: string | undefined;
  constructor(name: string, field?: string) {
    this.name = name;
    this.field = field;
  }
}

/** A row to insert: a plain object (not a Date, an array or a JSON value's class instance). */
const isRow = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;

const givenKeys = (o: Record<string, unknown>) =>
  Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();

export interface PrepareOptions {
  /**
   * PostgreSQL keeps the statement parsed and planned on each connection (`reusePlan` in @crm/db): for
   * statements whose best plan does not follow their values, such as a row by its id or an insert.
   */
  reusePlan?: boolean;
}

/**
 * A query written with the typed builder, compiled once per shape and run with each call's arguments:
 * building and compiling a query costs about as much CPU as running it on this machine (60 µs against
 * 85 µs for a deal's read, docs/api/organizations.md), and allocates more than the rows it returns, so the hot
 * paths would pay both on every request.
 *
 * `build` receives stand-ins for the arguments: each one given (not undefined) stands for its value, each
 * one left out is undefined, so a query may change shape by what is given (a filter present or not), and
 * one compiled form is kept per set of given arguments. An argument that is a plain object is a row (for
 * `values(…)`): each of its given fields stands for its own value. The stand-ins are bound as parameters
 * only: give them to comparisons, `values`, `limit`/`offset` and `sql` fragments, never to
 * `sql.lit`/`sql.raw`, an `in` list or a test of their value. Every other parameter is refused when the
 * query is first compiled (`fixed` aside), so a value captured from outside `build` cannot be frozen into
 * the kept form: write constants as `sql.lit(…)`.
 */
export function prepareQuery<A extends Record<string, unknown>, R>(
  what: string,
  build: (db: Kysely<Tables>, args: A) => Compilable<R>,
  options: PrepareOptions & {
    plugin?: KyselyPlugin;
    fixed?: { marker: symbol; value: (em: EntityManager) => unknown };
  } = {},
): (em: EntityManager, args: A) => Promise<R[]> {
  const { plugin, fixed } = options;
  const compiled = new Map<string, CompiledQuery<R>>();
  const compile = (em: EntityManager, args: A): CompiledQuery<R> => {
    const standIns: Record<string, unknown> = {};
    for (const name of givenKeys(args)) {
      const value = args[name];
      // The shape key joins names and fields with ',' and '(': other characters could make two shapes one.
      for (const key of [name, ...(isRow(value) ? givenKeys(value) : [])])
        if (!/^\w+$/.test(key))
          throw new Error(`${what}: argument and field names are identifiers, not ${key}`);
      standIns[name] = isRow(value)
        ? Object.fromEntries(givenKeys(value).map((field) => [field, new Arg(name, field)]))
        : new Arg(name);
    }
    const db = plugin ? sqlOf(em).withPlugin(plugin) : sqlOf(em);
    const query = build(db, standIns as A).compile();
    const isFixed = (p: unknown) => fixed !== undefined && p === fixed.marker;
    for (const parameter of query.parameters)
      if (!isFixed(parameter) && !(parameter instanceof Arg))
        throw new Error(
          `${what}: the parameter ${JSON.stringify(parameter)} is not an argument; write constants with sql.lit`,
        );
    if (options.reusePlan) reusePlan(query.sql);
    return query;
  };
  // The given names (and a row's given fields) in their own order, without sorting or arrays: this runs on
  // every call. The same set in another order is another shape, compiled once more; both are right.
  const shapeOf = (args: A) => {
    let shape = '';
    for (const name in args) {
      const value = args[name];
      if (value === undefined) continue;
      shape += name;
      if (isRow(value)) {
        shape += '(';
        for (const field in value) if (value[field] !== undefined) shape += `${field},`;
        shape += ')';
      }
      shape += ',';
    }
    return shape;
  };
  return async (em, args) => {
    const fixedValue = fixed?.value(em);
    const shape = shapeOf(args);
    let query = compiled.get(shape);
    if (!query) {
      query = compile(em, args);
      compiled.set(shape, query);
    }
    const parameters = query.parameters.map((p) => {
      if (fixed !== undefined && p === fixed.marker) return fixedValue;
      const arg = p as Arg;
      const value = args[arg.name];
      return arg.field === undefined ? value : (value as Record<string, unknown>)[arg.field];
    });
    const result = await sqlOf(em).executeQuery<R>(CompiledQuery.raw(query.sql, parameters));
    return result.rows;
  };
}
