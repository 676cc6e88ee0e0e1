import { AsyncLocalStorage } from 'node:async_hooks';

/** Through which door a call came. */
export type Door = 'rest' | 'trpc' | 'mcp' | 'dashboard';

/** Who made a change, as events and the feed say it. */
export type Actor =
  | { type: 'api_key'; api_key_id: string; via: Exclude<Door, 'dashboard'> }
  | { type: 'user'; user_id: string; via: 'dashboard' };

export interface CallInfo {
  actor: Actor;
  requestId: string;
}

/**
 * The call being served, for what records a change deep inside a service (`emitEvent`): set once where a
 * door admits the call, rather than passed through every function between.
 */
const calls = new AsyncLocalStorage<CallInfo>();

export function runAsCall<T>(info: CallInfo, fn: () => T): T {
  return calls.run(info, fn);
}

export function currentCall(): CallInfo | undefined {
  return calls.getStore();
}
