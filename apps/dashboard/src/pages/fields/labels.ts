import type { CustomObject, FieldType } from '../../api.ts';

/** "deals" → "Deals": the server's names of the objects that carry fields, as headings say them. */
export function objectLabel(object: CustomObject): string {
  return object.charAt(0).toUpperCase() + object.slice(1);
}

/**
 * The types as people say them. The types themselves come from the server (FIELD_TYPES); typing this as a
 * Record over them makes a type added there fail to compile until it is named here.
 */
export const TYPE_LABELS: Record<FieldType, string> = {
  text: 'Text',
  long_text: 'Long text',
  number: 'Number',
  currency: 'Currency',
  boolean: 'Yes / no',
  date: 'Date',
  datetime: 'Date and time',
  select: 'Select',
  multi_select: 'Multi-select',
  email: 'Email',
  url: 'URL',
  phone: 'Phone',
  json: 'JSON',
};

/** The form's inputs, by the path the server names in its messages (`validation.pattern: …`). */
const INPUTS: Record<string, { id: string; label: string }> = {
  object: { id: 'field-object', label: 'Object' },
  key: { id: 'field-key', label: 'Key' },
  label: { id: 'field-label', label: 'Label' },
  type: { id: 'field-type', label: 'Type' },
  options: { id: 'field-option-0-value', label: 'Options' },
  validation: { id: 'field-min', label: 'Validation' },
  'validation.min': { id: 'field-min', label: 'Minimum' },
  'validation.max': { id: 'field-max', label: 'Maximum' },
  'validation.max_length': { id: 'field-max-length', label: 'Maximum length' },
  'validation.pattern': { id: 'field-pattern', label: 'Pattern' },
  default: { id: 'field-default', label: 'Default value' },
  required: { id: 'field-required', label: 'Required' },
  unique: { id: 'field-unique', label: 'Unique' },
  indexed: { id: 'field-indexed', label: 'Indexed' },
  description: { id: 'field-description', label: 'Description' },
  ai_hint: { id: 'field-ai-hint', label: 'AI hint' },
};

/**
 * `options[2].value` → the value input of the form's row the third option sent came from ("Option 3
 * value" when no row was left out as empty).
 */
function inputOf(
  path: string,
  optionRow: (sent: number) => number,
): { id: string; label: string } | undefined {
  const option = /^options\[(\d+)\]\.(value|label)$/.exec(path);
  if (option) {
    const row = optionRow(Number(option[1]));
    const part = option[2];
    return { id: `field-option-${row}-${part}`, label: `Option ${row + 1} ${part}` };
  }
  return INPUTS[path];
}

const PATH = /(^|; )([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)*): /g;

/**
 * The server's message about a new field in the form's terms: each path it names (`validation.pattern:`)
 * said as the input's label ("Pattern:"), and the input the first one names, to show the message by it.
 * The rules and their wording stay the server's: this only says where.
 */
export function fieldProblem(
  message: string,
  optionRow: (sent: number) => number = (sent) => sent,
): { inputId: string | undefined; text: string } {
  let inputId: string | undefined;
  const text = message.replace(PATH, (whole, before: string, path: string) => {
    const input = inputOf(path, optionRow);
    if (!input) return whole;
    inputId ??= input.id;
    return `${before}${input.label}: `;
  });
  return { inputId, text };
}
