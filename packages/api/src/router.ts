import { dealsRouter } from './features/deals/deals.router.ts';
import { router } from './trpc.ts';

export const appRouter = router({
  deals: dealsRouter,
});
export type AppRouter = typeof appRouter;
