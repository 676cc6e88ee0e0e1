import { createContext, useContext, useEffect } from 'react';
import type { Me } from './api.ts';

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
