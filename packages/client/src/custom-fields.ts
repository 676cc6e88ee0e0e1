import type {
  BuiltInFilterFields,
  CustomFieldFilterTypes,
  CustomFieldType,
  CustomObject,
  FilterOperators,
  FilterRelations,
} from './query.gen.ts';

export type { CustomFieldType, CustomObject };

/**
 * One custom field as `crm schema types` declares it: what the typed client needs to type its values
 * (reads, creates, PATCHes) and filters on it.
 */
export interface CustomFieldSpec {
  type: CustomFieldType;
  /** A create must give it (no default fills it). */
  required?: boolean;
  /** It has a default: a create may leave it out, and records created before the default may lack it. */
  defaulted?: boolean;
  /** Archived: still read (and filtered on), no longer written. */
  archived?: boolean;
  /** select, multi_select: the values writes take. */
  options?: string;
  /** select, multi_select: archived options, which records may still hold. */
  archivedOptions?: string;
}

/** An organization's custom fields by object and key: what `crm schema types` prints (`OrgFields`). */
export type OrgFieldsShape = { [O in CustomObject]?: { [key: string]: CustomFieldSpec } };

/** Untyped: no declaration given, `custom` is `Record<string, unknown>` and `filter` any object, as before. */
export type UntypedFields = { untyped: true };

type SpecsOf<F, O extends CustomObject> = O extends keyof F
  ? F[O] extends { [key: string]: CustomFieldSpec }
    ? F[O]
    : Record<never, CustomFieldSpec>
  : Record<never, CustomFieldSpec>;

type Options<S, Read extends boolean> =
  | (S extends { options: infer V extends string } ? V : never)
  | (Read extends true ? (S extends { archivedOptions: infer V extends string } ? V : never) : never);

/** A field's value as TypeScript types it: in reads (`Read`) a select may hold an archived option. */
export type CustomValue<S, Read extends boolean = true> = S extends { type: 'number' | 'currency' }
  ? number
  : S extends { type: 'boolean' }
    ? boolean
    : S extends { type: 'select' }
      ? Options<S, Read>
      : S extends { type: 'multi_select' }
        ? Options<S, Read>[]
        : S extends { type: 'json' }
          ? unknown
          : string;

/** On every record read: required without a default (and not archived) means every record holds it. */
type Present<S> = S extends { required: true }
  ? S extends { defaulted: true } | { archived: true }
    ? false
    : true
  : false;
type Active<S> = S extends { archived: true } ? false : true;
type KeysWhere<Specs, Want extends 'present' | 'absent' | 'required' | 'optional' | 'active'> = {
  [K in keyof Specs]: Want extends 'present'
    ? Present<Specs[K]> extends true
      ? K
      : never
    : Want extends 'absent'
      ? Present<Specs[K]> extends true
        ? never
        : K
      : Active<Specs[K]> extends false
        ? never
        : Want extends 'active'
          ? K
          : Present<Specs[K]> extends true
            ? Want extends 'required'
              ? K
              : never
            : Want extends 'optional'
              ? K
              : never;
}[keyof Specs];

type Flat<T> = { [K in keyof T]: T[K] } & {};

/** `custom` as a record is read. */
export type CustomValuesOut<F, O extends CustomObject> = Flat<
  { [K in KeysWhere<SpecsOf<F, O>, 'present'>]: CustomValue<SpecsOf<F, O>[K]> } & {
    [K in KeysWhere<SpecsOf<F, O>, 'absent'>]?: CustomValue<SpecsOf<F, O>[K]>;
  }
>;

/** `custom` as a create (and a batch item) sends it: required fields present, archived ones refused. */
export type CustomValuesCreate<F, O extends CustomObject> = Flat<
  { [K in KeysWhere<SpecsOf<F, O>, 'required'>]: CustomValue<SpecsOf<F, O>[K], false> } & {
    [K in KeysWhere<SpecsOf<F, O>, 'optional'>]?: CustomValue<SpecsOf<F, O>[K], false>;
  }
>;

/** `custom` as a PATCH sends it: only the keys that change; `null` clears a field that is not required. */
export type CustomValuesPatch<F, O extends CustomObject> = Flat<{
  [K in KeysWhere<SpecsOf<F, O>, 'active'>]?:
    | CustomValue<SpecsOf<F, O>[K], false>
    | (SpecsOf<F, O>[K] extends { required: true } ? never : null);
}>;

// ---- The filter tree (docs/api/query.md), typed by the object's fields ----

type ValueType = keyof FilterOperators;
/** A field as the filter language types it: the operators its type takes, the values it compares. */
type FieldKind = { type: ValueType; values?: string };

type CustomKinds<F, O extends CustomObject, Prefix extends string> = {
  [K in keyof SpecsOf<F, O> & string as `${Prefix}custom.${K}`]: {
    type: SpecsOf<F, O>[K] extends { type: infer T extends CustomFieldType }
      ? CustomFieldFilterTypes[T]
      : never;
    values: Options<SpecsOf<F, O>[K], true>;
  };
};

type RelatedCustomKinds<F, O extends CustomObject> = {
  [R in keyof FilterRelations[O] & string]: FilterRelations[O][R] extends CustomObject
    ? CustomKinds<F, FilterRelations[O][R], `${R}.`>
    : never;
}[keyof FilterRelations[O] & string];

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** Every field a filter on `O` can name, with its kind: its own, `custom.<key>`, and one hop away. */
export type FilterFields<F, O extends CustomObject> = BuiltInFilterFields[O] &
  CustomKinds<F, O, ''> &
  UnionToIntersection<RelatedCustomKinds<F, O>>;

type Scalar<K extends FieldKind> = K['type'] extends 'number'
  ? number
  : K['type'] extends 'boolean'
    ? boolean
    : K['type'] extends 'enum' | 'array'
      ? K['values'] extends string
        ? K['values']
        : string
      : K['type'] extends 'json'
        ? never
        : string;

type Ops<K extends FieldKind> = FilterOperators[K['type']];

/** The conditions on one field: each operator its type takes, with the value that operator compares. */
type ConditionOn<Name extends string, K extends FieldKind> =
  | { field: Name; op: Extract<Ops<K>, 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte'>; value: Scalar<K> }
  | { field: Name; op: Extract<Ops<K>, 'contains' | 'starts_with'>; value: Scalar<K> }
  | { field: Name; op: Extract<Ops<K>, 'between'>; value: readonly [Scalar<K>, Scalar<K>] }
  | { field: Name; op: Extract<Ops<K>, 'in' | 'nin' | 'has_any' | 'has_all'>; value: readonly Scalar<K>[] }
  | { field: Name; op: 'is_null'; value: boolean };

/** One condition of a filter on `O`: a field the object has, an operator its type takes, a value that fits. */
export type FilterCondition<F, O extends CustomObject> = {
  [N in keyof FilterFields<F, O> & string]: FilterFields<F, O>[N] extends FieldKind
    ? ConditionOn<N, FilterFields<F, O>[N]>
    : never;
}[keyof FilterFields<F, O> & string];

/**
 * A filter tree on `O` (`deals`, `contacts`, `companies`) for an organization's fields `F`: what
 * `deals.query` (and `POST /deals/query`) take. A misspelled field, an operator its type does not take, or
 * a value of the wrong type is a compile error. For `?filter=` (a list's text), `JSON.stringify` one.
 */
export type Filter<F, O extends CustomObject> =
  | FilterCondition<F, O>
  | { and: readonly Filter<F, O>[] }
  | { or: readonly Filter<F, O>[] }
  | { not: Filter<F, O> };

/**
 * A saved view's create (`views.create`, `POST /views`) for an organization's fields `F`: one shape per
 * object the view can be of, each with its `filter` typed as that object's Filter, so a field of another
 * object or a misspelled one does not compile. Activities have no custom fields: theirs stays an object.
 */
export type ViewCreateWith<T, F> = T extends { object: infer O extends string }
  ? {
      [K in O]: Flat<
        Omit<T, 'object' | 'filter'> & { object: K } & (K extends CustomObject
            ? { filter?: Filter<F, K> }
            : Pick<T, Extract<'filter', keyof T>>)
      >;
    }[O]
  : T;

// ---- The router and the REST paths with `custom` and `filter` typed ----

type Direction = 'create' | 'patch' | 'out';
/** Where a record of another object sits inside an answer: `deal` in a detail, `deals` in a search. */
type ObjectOfKey = {
  deal: 'deals';
  deals: 'deals';
  contact: 'contacts';
  contacts: 'contacts';
  company: 'companies';
  companies: 'companies';
};

type CustomFor<F, O extends CustomObject, D extends Direction> = D extends 'out'
  ? CustomValuesOut<F, O>
  : D extends 'patch'
    ? CustomValuesPatch<F, O>
    : CustomValuesCreate<F, O>;

/** `T` with each `custom` typed for the object it sits on, and a `filter` object typed as a Filter. */
export type WithFields<T, F, O extends CustomObject | undefined, D extends Direction> = T extends
  | string
  | number
  | boolean
  | null
  | undefined
  ? T
  : T extends readonly (infer U)[]
    ? WithFields<U, F, O, D>[]
    : T extends object
      ? {
          [K in keyof T]: K extends 'custom'
            ? O extends CustomObject
              ? CustomFor<F, O, D> | Extract<T[K], undefined>
              : T[K]
            : K extends 'filter'
              ? O extends CustomObject
                ? Exclude<T[K], undefined> extends string
                  ? T[K]
                  : Filter<F, O> | Extract<T[K], undefined>
                : T[K]
              : WithFields<T[K], F, K extends keyof ObjectOfKey ? ObjectOfKey[K] : O, D>;
        }
      : T;
