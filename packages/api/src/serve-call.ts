import { admitCall } from './admission.ts';
import type { AuthedContext, Context } from './context.ts';
import { type ErrorBody, toErrorResponse } from './errors.ts';
import type { Admission } from './limits/limits.ts';
import type { Log } from './limits/log.ts';
import { appRouter } from './router.ts';
import type { Operation } from './routes.ts';
import { createCallerFactory } from './trpc.ts';

/** What a call answered, as every door writes it: a status, the headers it earned, and a result or the contract's error. */
export type CallOutcome =
  | { ok: true; status: number; headers: Record<string, string>; result: unknown; admission?: Admission }
  | { ok: false; status: number; headers: Record<string, string>; error: ErrorBody };

/**
 * The one policy for a call that failed, whichever door it came through: an answer (4xx) is not logged, an
 * outage (503: the database down or hung) is one warning line without a stack, anything else is an error
 * with its stack.
 */
export function logFailure(log: Log, requestId: string | undefined, err: unknown, status: number): void {
  if (status < 500) return;
  if (status === 503) log.warn({ req_id: requestId, reason: (err as Error)?.message }, 'service unavailable');
  else log.error({ req_id: requestId, err }, 'request failed');
}

const callerOf = createCallerFactory(appRouter);

type ProcedureCall = (input: unknown) => Promise<unknown>;

/** The operation's procedure on a caller: `deals.list` is `caller.deals.list`. */
function procedureOf(caller: unknown, op: Operation): ProcedureCall {
  let target = caller;
  for (const part of op.procedure.split('.')) target = (target as Record<string, unknown>)[part];
  return target as ProcedureCall;
}

/**
 * One call of an operation, as REST and MCP make it (tRPC's own handler runs the same procedures, through
 * the same admission and error table): admitted unless its door already did (API key, scope, rate limit,
 * quotas), its procedure run as that call (`authedProcedure` sets who acts), and any failure mapped to the
 * contract's status and body and logged once, by `logFailure`.
 */
export async function serveCall(ctx: Context, op: Operation, input: unknown): Promise<CallOutcome> {
  try {
    const admitted: AuthedContext =
      ctx.principal && ctx.admission ? (ctx as AuthedContext) : await admitCall(ctx, op);
    const result = await procedureOf(callerOf(admitted), op)(input);
    const { headers } = admitted.response;
    return { ok: true, status: op.successStatus, headers, result, admission: admitted.admission };
  } catch (err) {
    const { status, body, headers } = toErrorResponse(err);
    logFailure(ctx.services.log, ctx.requestId, err, status);
    // Headers the call already earned (rate-limit and quota headers) go on its error too.
    return { ok: false, status, headers: { ...ctx.response.headers, ...headers }, error: body };
  }
}
