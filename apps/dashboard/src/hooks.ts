import { type QueryKey, useMutation, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react';
import { errorMessage, type Me } from './api.ts';
import { isSignedOut, redirectToSignIn } from './session.ts';

export const MeContext = createContext<Me | null>(null);

/** The signed-in person and organization; only inside the shell. */
export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe() outside the signed-in shell');
  return me;
}

export function useIsAdmin(): boolean {
  return useMe().user.role === 'admin';
}

export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Headless CRM`;
  }, [title]);
}

/**
 * A form's request: `pending` while it runs, `error` the sentence to show when it failed (or what a check
 * before sending found, through `setError`); a signed-out person is sent to sign in. What the request
 * returns goes to `onSuccess` and stays with the caller: a shown-once secret lives in its dialog's state,
 * not in a cache of the query client.
 */
export function useRequest() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function run<T>(request: () => Promise<T>, onSuccess: (result: T) => void): Promise<void> {
    setPending(true);
    setError(null);
    try {
      onSuccess(await request());
    } catch (e) {
      if (isSignedOut(e)) redirectToSignIn();
      setError(errorMessage(e));
    } finally {
      setPending(false);
    }
  }
  return { pending, error, setError, run };
}

type NoticeMessage = { kind: 'success' | 'error'; text: ReactNode };
export type Outcome = ReturnType<typeof useOutcome>;

/**
 * The outcome of the last action on a page, for its <Notice>, which takes the focus (the button that did
 * it may be gone with what it changed). `succeeded` also fetches again the queries the action changed.
 */
export function useOutcome() {
  const queryClient = useQueryClient();
  const [notice, setNotice] = useState<NoticeMessage | null>(null);
  return {
    notice,
    dismiss: () => setNotice(null),
    succeeded(text: ReactNode, ...changed: QueryKey[]) {
      setNotice({ kind: 'success', text });
      for (const queryKey of changed) void queryClient.invalidateQueries({ queryKey });
    },
    failed: (error: unknown) => setNotice({ kind: 'error', text: errorMessage(error) }),
  };
}

/** A button's action on a page (Send test event, Replay): what came of it goes to the page's notice. */
export function useAction<T>(
  outcome: Outcome,
  action: {
    run: (input: T) => Promise<unknown>;
    /** The success notice. */
    done: (input: T) => ReactNode;
    /** The queries it changes. */
    changes: QueryKey;
  },
) {
  return useMutation({
    mutationFn: action.run,
    onSuccess: (_result, input) => outcome.succeeded(action.done(input), action.changes),
    onError: outcome.failed,
  });
}

/** Renders again every `ms`, so times that pass show on an open page (each render reads the clock itself). */
export function useRerenderEvery(ms: number): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), ms);
    return () => clearInterval(timer);
  }, [ms]);
}

/** The items checked in a list of checkboxes: `toggle` checks or unchecks one, `setChecked` sets them all. */
export function useCheckedSet<T>() {
  const [checked, setChecked] = useState<ReadonlySet<T>>(new Set());
  function toggle(item: T, on: boolean) {
    setChecked((current) => {
      const next = new Set(current);
      if (on) next.add(item);
      else next.delete(item);
      return next;
    });
  }
  return [checked, toggle, setChecked] as const;
}
