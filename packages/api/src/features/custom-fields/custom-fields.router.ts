import { z } from 'zod';
import { dataOf } from '../../schemas.ts';
import { authedProcedure, router } from '../../trpc.ts';
import {
  CustomField,
  CustomFieldConversion,
  CustomFieldConvertInput,
  CustomFieldCreateInput,
  CustomFieldListQuery,
  CustomFieldUpdateInput,
  FieldPath,
  ObjectPath,
} from './custom-field.schemas.ts';
import {
  archiveCustomField,
  convertCustomField,
  createCustomField,
  getCustomField,
  listCustomFields,
  updateCustomField,
} from './custom-fields.service.ts';
import { applySchema, planSchema, SchemaApplied, SchemaFile, SchemaPlan } from './schema-file.ts';

const tags = ['Custom fields'];

export const customFieldsRouter = router({
  schemaPlan: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/custom-fields/plan',
        tags,
        summary: 'What applying a schema file would change',
        description:
          'Compares a schema file (`crm schema export` writes one) with the organization’s fields: the fields it would add, change (attribute by attribute) and archive, and each step’s problem where the data or the rules forbid it (a required or unique rule the records break, a type change, an archived key). Changes nothing.',
      },
      scope: 'schema:read',
      agentHint: 'Use to preview a change of the custom fields kept as a schema file.',
    })
    .input(SchemaFile)
    .output(dataOf(SchemaPlan))
    .mutation(async ({ ctx, input }) => ({ data: await planSchema(ctx.em, input) })),

  schemaApply: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/custom-fields/apply',
        tags,
        summary: 'Make the organization’s fields what a schema file says',
        description:
          'Applies the plan of a schema file in one transaction: every step, or none (409 `conflict` naming each step’s problem). An object the file leaves out is not touched; one listed with `[]` has every field archived. Returns the plan applied and the fields as they now are.',
      },
      scope: 'schema:write',
      agentHint: 'Use only when asked to apply a schema file of custom fields.',
      errors: ['conflict'],
    })
    .input(SchemaFile)
    .output(dataOf(SchemaApplied))
    .mutation(async ({ ctx, input }) => ({ data: await applySchema(ctx.em, input) })),

  list: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/custom-fields/{object}',
        tags,
        summary: 'The organization’s own fields on deals or contacts',
        description:
          'Lists the custom fields of `object` (`deals` or `contacts`) in the order they were defined: each with its key (the name of its value under `custom`), type, rules and options. Archived fields only with `include_archived=true`.',
      },
      scope: 'schema:read',
      agentHint:
        'Use to learn which custom fields deals or contacts have (their keys, types and allowed options) before writing values under `custom`.',
    })
    .input(CustomFieldListQuery)
    .output(dataOf(z.array(CustomField)))
    .query(async ({ ctx, input }) => ({
      data: await listCustomFields(ctx.em, input.object, input.include_archived),
    })),

  create: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/custom-fields/{object}',
        tags,
        summary: 'Define a custom field',
        description:
          'Adds a field to every record of `object`: its values are then written and read under `custom.<key>` on creates, updates, batches, imports, reads, lists and events, and checked against its type and rules. A `required` field without a `default` needs every existing record to hold a value already (409 with the count and the first ids otherwise). `indexed: true` has filters on the field served by an index (not for long_text or json: 400). 409 when the key exists (or existed: archived keys are never reused), the object has 200 fields, or 20 indexed ones.',
        successDescription: 'Created',
      },
      scope: 'schema:write',
      agentHint: 'Use only when asked to add a field to deals or contacts.',
      successStatus: 201,
      errors: ['conflict'],
    })
    .input(
      CustomFieldCreateInput.extend(ObjectPath.shape).meta({
        examples: CustomFieldCreateInput.meta()?.examples,
      }),
    )
    .output(dataOf(CustomField))
    .mutation(async ({ ctx, input: { object, ...field } }) => ({
      data: await createCustomField(ctx.em, object, field),
    })),

  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/custom-fields/{object}/{key}',
        tags,
        summary: 'One custom field',
        description: 'Returns the field (archived ones too).',
      },
      scope: 'schema:read',
      agentHint: 'Use to read the type, rules and options of one custom field.',
    })
    .input(FieldPath)
    .output(dataOf(CustomField))
    .query(async ({ ctx, input }) => ({ data: await getCustomField(ctx.em, input.object, input.key) })),

  update: authedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/custom-fields/{object}/{key}',
        tags,
        summary: 'Change a custom field’s label, rules, options or index',
        description:
          'Changes what is sent. `options` is the whole list: an option left out is archived (values holding it stay readable; writes refuse it). Making a field `required` needs every record to hold a value, making it `unique` needs the values held to be unique already: otherwise 409 with the count and the first ids. Making it `indexed` indexes the values records hold in the same change (409 when the object has 20 indexed fields); unsetting it drops the index. The key does not change; the type changes by POST /custom-fields/{object}/{key}/convert.',
      },
      scope: 'schema:write',
      agentHint: 'Use only when asked to change a custom field.',
      errors: ['conflict'],
    })
    .input(
      CustomFieldUpdateInput.extend(FieldPath.shape).meta({
        examples: CustomFieldUpdateInput.meta()?.examples,
      }),
    )
    .output(dataOf(CustomField))
    .mutation(async ({ ctx, input: { object, key, ...changes } }) => ({
      data: await updateCustomField(ctx.em, object, key, changes),
    })),

  convert: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/custom-fields/{object}/{key}/convert',
        tags,
        summary: 'Change a custom field’s type, converting its values (with a dry run)',
        description:
          'Changes the field’s `type` (with the new type’s `options` and `validation`) and converts every value records hold: a numeric text to its number, "yes"/"no"/"true"/"false"/"1"/"0" to a boolean, a date-time to its UTC day, a value to its text, a text of comma-separated options to a multi_select, …, each then checked by the new type’s rules. `dry_run: true` changes nothing and answers how many values convert, how many of them change, and the first ids (with value and reason) of those that do not. Applied, all or nothing: values that do not convert make it a 409 naming their count and the first ids, unless `clear_unconvertible: true` clears them; two values that become one on a unique field are a 409 too. A default that does not convert is a 400.',
      },
      scope: 'schema:write',
      agentHint:
        'Use only when asked to change a custom field’s type; run it with dry_run first and show what would not convert.',
      errors: ['conflict'],
    })
    .input(
      CustomFieldConvertInput.extend(FieldPath.shape).meta({
        examples: CustomFieldConvertInput.meta()?.examples,
      }),
    )
    .output(dataOf(CustomFieldConversion))
    .mutation(async ({ ctx, input: { object, key, ...conversion } }) => ({
      data: await convertCustomField(ctx.em, object, key, conversion),
    })),

  delete: authedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/custom-fields/{object}/{key}',
        tags,
        summary: 'Archive a custom field',
        description:
          'Archives the field: writes no longer take it, the values records hold stay readable (in reads, history and exports), and its key is never used again. Returns the archived field; archiving it again changes nothing.',
      },
      scope: 'schema:write',
      agentHint: 'Use only when asked to remove a custom field.',
    })
    .input(FieldPath)
    .output(dataOf(CustomField))
    .mutation(async ({ ctx, input }) => ({
      data: await archiveCustomField(ctx.em, input.object, input.key),
    })),
});
