import { type CrmResponse, describeResponse } from './response.ts';
import type { ErrorBody, ErrorCode } from './router.gen.ts';

/**
 * An error answer of the API, on either client: the HTTP status, the contract's `code`, its body and the
 * request id. Failures that never got an answer stay what fetch throws (`TimeoutError`, `AbortError`,
 * a `TypeError` for the network).
 */
export class CrmError extends Error {
  override readonly name = 'CrmError';
  readonly status: number;
  /** The contract's error code; `undefined` for an answer that is not the API's (a proxy's 502). */
  readonly code: ErrorCode | undefined;
  /** The error body as the API sent it (`retry_after_seconds`, `reset_at`… on a 429). */
  readonly body: ErrorBody;
  readonly requestId: string | null;
  /** The rest of the answer: rate limit, quotas, attempts, headers. */
  readonly response: CrmResponse;

  constructor(response: CrmResponse, body: ErrorBody) {
    super(body.error);
    this.status = response.status;
    this.code = body.code;
    this.body = body;
    this.requestId = response.requestId;
    this.response = response;
  }

  /** Reads an error answer's body. */
  static async from(response: Response): Promise<CrmError> {
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {}
    // REST answers the contract's body; tRPC wraps it as `{ error: { data: { body } } }`.
    const trpcBody = (parsed as { error?: { data?: { body?: unknown } } } | undefined)?.error?.data?.body;
    const body = isErrorBody(trpcBody) ? trpcBody : isErrorBody(parsed) ? parsed : undefined;
    return new CrmError(describeResponse(response), body ?? { error: text || `HTTP ${response.status}` });
  }
}

const isErrorBody = (value: unknown): value is ErrorBody =>
  value !== null && typeof value === 'object' && typeof (value as { error?: unknown }).error === 'string';
