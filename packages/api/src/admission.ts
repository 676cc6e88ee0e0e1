import { authenticate } from './auth.ts';
import type { AuthedContext, Context } from './context.ts';
import { ApiError } from './errors.ts';
import type { LimitGroup } from './limits/groups.ts';
import { admitRequest } from './limits/limit-check.ts';
import { allows, type Scope } from './scopes.ts';

/**
 * The one admission of an API call, whichever door it came through (REST, tRPC, MCP): resolves the API
 * key to its organization and scopes the unit of work to it (401 otherwise), then checks and counts the
 * call against its rate-limit group and the monthly quotas (429 otherwise), once the key is known to hold
 * the operation's scope (403 otherwise). The headers it earned go on `ctx.response`; the answer is the call's context with its principal and admission. (`ctx` itself is not
 * marked admitted: the calls of a tRPC batch share it, and each is admitted on its own.)
 */
export async function admitCall(
  ctx: Context,
  operation?: { rateLimit?: LimitGroup; scope?: Scope },
): Promise<AuthedContext> {
  const principal = ctx.principal ?? (await authenticate(ctx));
  // Before the limits: a call the key may not make counts against nothing.
  if (operation?.scope && !allows(principal.scopes, operation.scope))
    throw new ApiError(
      'insufficient_scope',
      `This API key lacks the scope ${operation.scope}, which this operation needs (the key has: ${principal.scopes.join(', ')})`,
    );
  const authed: AuthedContext = { ...ctx, principal };
  return { ...authed, admission: await admitRequest(authed, operation?.rateLimit ?? 'default') };
}
