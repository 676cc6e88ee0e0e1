import type { ValueType } from './fields.ts';
import type { Checked, Operator } from './filter.ts';

/**
 * A checked filter as plain JSON, for evaluating over records already in hand (an event's `data`): each
 * condition with its field's type and its value as the checker normalized it. A webhook stores it, so the
 * worker evaluates without the organization's field definitions (docs/api/webhooks.md#filters).
 */
export type Plan =
  | { and: Plan[] }
  | { or: Plan[] }
  | { not: Plan }
  | {
      field: string;
      type: ValueType;
      op: Operator;
      value: unknown;
      /** A related record's field: the records the object's output carries under this key (`links`). */
      via?: string;
    };

/** The plan of a checked filter. */
export function planOf(node: Checked): Plan {
  switch (node.kind) {
    case 'and':
      return { and: node.nodes.map(planOf) };
    case 'or':
      return { or: node.nodes.map(planOf) };
    case 'not':
      return { not: planOf(node.node) };
    case 'leaf':
      return {
        field: node.field.name,
        type: node.field.type,
        op: node.op,
        value: node.value,
        ...(node.field.related ? { via: node.field.related.via } : {}),
      };
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T/;

/**
 * A record's value of a field as the SQL compiler reads it (fields.ts, `customExpr`): of the field's type
 * or empty (null), a value of another JSON type being empty too; date-times as instants, uuids lower case.
 */
function fieldValue(record: Record<string, unknown>, name: string, type: ValueType): unknown {
  const raw = name.startsWith('custom.')
    ? (record.custom as Record<string, unknown> | null | undefined)?.[name.slice(7)]
    : record[name];
  if (raw === undefined || raw === null) return null;
  switch (type) {
    case 'number':
      return typeof raw === 'number' ? raw : null;
    case 'boolean':
      return typeof raw === 'boolean' ? raw : null;
    case 'date':
      return typeof raw === 'string' && DATE.test(raw) ? raw : null;
    case 'date-time': {
      const at = typeof raw === 'string' && DATE_TIME.test(raw) ? Date.parse(raw) : Number.NaN;
      return Number.isNaN(at) ? null : at;
    }
    case 'uuid':
      return typeof raw === 'string' ? raw.toLowerCase() : null;
    case 'array':
      return Array.isArray(raw) ? raw : null;
    case 'json':
      return raw;
    default:
      return typeof raw === 'string' ? raw : null;
  }
}

/** A checked value in the form `fieldValue` gives (date-times as instants). */
const operand = (type: ValueType, v: unknown) => (type === 'date-time' ? Date.parse(v as string) : v);

/** One condition over one value, two-valued as the SQL is: an empty value meets only neq, nin and is_null true. */
function holds(type: ValueType, actual: unknown, op: Operator, value: unknown): boolean {
  if (op === 'is_null') return (actual === null) === value;
  const list = () => (value as unknown[]).map((v) => operand(type, v));
  if (op === 'neq') return actual === null || actual !== operand(type, value);
  if (op === 'nin') return actual === null || !list().includes(actual);
  if (actual === null) return false;
  const a = actual as number | string;
  switch (op) {
    case 'eq':
      return a === operand(type, value);
    case 'lt':
      return a < (operand(type, value) as number | string);
    case 'lte':
      return a <= (operand(type, value) as number | string);
    case 'gt':
      return a > (operand(type, value) as number | string);
    case 'gte':
      return a >= (operand(type, value) as number | string);
    case 'between': {
      const [low, high] = list() as Array<number | string>;
      return a >= (low as number | string) && a <= (high as number | string);
    }
    case 'in':
      return list().includes(a);
    case 'contains':
      return String(a).toLowerCase().includes(String(value).toLowerCase());
    case 'starts_with':
      return String(a).toLowerCase().startsWith(String(value).toLowerCase());
    case 'has_any':
      return (value as unknown[]).some((v) => (actual as unknown[]).includes(v));
    case 'has_all':
      return (value as unknown[]).every((v) => (actual as unknown[]).includes(v));
  }
}

/**
 * Whether a record (an event's `data`: the object's output) meets the plan: the same answer the SQL
 * compiler's condition gives for the row (`filter.ts`, `compileFilter`). A related field reads the array
 * the output carries under its relation (`links` of an activity): true when one of its records meets it.
 */
export function matchesPlan(plan: Plan, record: Record<string, unknown>): boolean {
  if ('and' in plan) return plan.and.every((p) => matchesPlan(p, record));
  if ('or' in plan) return plan.or.some((p) => matchesPlan(p, record));
  if ('not' in plan) return !matchesPlan(plan.not, record);
  if (plan.via) {
    const related = record[plan.via];
    const name = plan.field.slice(plan.via.length + 1);
    return (
      Array.isArray(related) &&
      related.some(
        (r) =>
          r !== null &&
          typeof r === 'object' &&
          holds(plan.type, fieldValue(r as Record<string, unknown>, name, plan.type), plan.op, plan.value),
      )
    );
  }
  return holds(plan.type, fieldValue(record, plan.field, plan.type), plan.op, plan.value);
}
