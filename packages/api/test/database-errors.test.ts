import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { toErrorResponse } from '../src/errors.ts';

/** How failures the database reports reach the caller (the HTTP races behind them are in kept-counts.test). */
describe('database errors as the caller sees them', () => {
  it('a write that refers to a deal deleted meanwhile answers 404, not 500', () => {
    // As MikroORM raises it when a PATCH's activity meets a deal another request deleted after the read.
    const err = Object.assign(
      new Error('insert or update on table "activities" violates foreign key constraint'),
      {
        name: 'ForeignKeyConstraintViolationException',
        code: '23503',
        constraint: 'activities_deal_id_fkey',
      },
    );
    expect(toErrorResponse(err)).toMatchObject({
      status: 404,
      body: { error: 'Deal not found', code: 'not_found' },
    });
    expect(toErrorResponse(new Error('wrapped', { cause: err })).status).toBe(404);
  });

  it('a write for an organization deleted meanwhile answers 401, as its key does from then on', () => {
    const err = Object.assign(new Error('violates foreign key constraint "deals_org_id_fkey"'), {
      code: '23503',
      constraint: 'deals_org_id_fkey',
    });
    expect(toErrorResponse(err)).toMatchObject({
      status: 401,
      body: { error: 'Invalid or revoked API key', code: 'invalid_api_key' },
    });
    // An Idempotency-Key record names the (cascade-deleted) key that made the call.
    const idempotent = Object.assign(new Error('violates foreign key constraint'), {
      code: '23503',
      constraint: 'idempotency_keys_api_key_id_fkey',
    });
    expect(toErrorResponse(idempotent).status).toBe(401);
  });

  it('any other broken reference stays a 500 without details', () => {
    const err = Object.assign(
      new Error('violates foreign key constraint "webhook_deliveries_endpoint_id_fkey"'),
      {
        code: '23503',
        constraint: 'webhook_deliveries_endpoint_id_fkey',
      },
    );
    expect(toErrorResponse(err)).toMatchObject({
      status: 500,
      body: { error: 'Internal server error', code: 'internal_error' },
    });
  });

  it('an answer that fails its own output schema is a 500, not the caller’s 400', () => {
    // As tRPC raises it when a procedure's output does not parse.
    const issues = [
      { code: 'custom', path: ['data', 0, 'event_type'], message: 'Invalid option', input: 'x' },
    ];
    const err = new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: 'Output validation failed',
      cause: new ZodError(issues as never),
    });
    expect(toErrorResponse(err)).toMatchObject({ status: 500, body: { code: 'internal_error' } });
    const input = new TRPCError({ code: 'BAD_REQUEST', cause: new ZodError(issues as never) });
    expect(toErrorResponse(input)).toMatchObject({ status: 400, body: { code: 'invalid_request' } });
  });
});
