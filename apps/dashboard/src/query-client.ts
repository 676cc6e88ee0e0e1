import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { httpStatusOf } from './api.ts';
import { isSignedOut, redirectToSignIn } from './session.ts';

function onError(error: unknown): void {
  if (isSignedOut(error)) redirectToSignIn();
}

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      staleTime: 10_000,
      // The server's 4xx answers (signed out, forbidden, not found, invalid) will not change by asking again.
      retry: (failureCount, error) => {
        const status = httpStatusOf(error);
        if (status !== undefined && status < 500) return false;
        return failureCount < 2;
      },
    },
    mutations: { retry: false },
  },
});
