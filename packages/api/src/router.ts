import { activitiesRouter } from './features/activities/activities.router.ts';
import { aiRouter } from './features/ai/ai.router.ts';
import { companiesRouter } from './features/companies/companies.router.ts';
import { contactsRouter } from './features/contacts/contacts.router.ts';
import { customFieldsRouter } from './features/custom-fields/custom-fields.router.ts';
import { dealsRouter } from './features/deals/deals.router.ts';
import { eventsRouter } from './features/events/event-feed.router.ts';
import { pipelineRouter } from './features/pipeline/pipeline.router.ts';
import { pipelinesRouter } from './features/pipeline/pipelines.router.ts';
import { searchRouter } from './features/search/search.router.ts';
import { usageRouter } from './features/usage/usage.router.ts';
import { viewsRouter } from './features/views/views.router.ts';
import { webhooksRouter } from './features/webhooks/webhooks.router.ts';
import { router } from './trpc.ts';

export const appRouter = router({
  deals: dealsRouter,
  contacts: contactsRouter,
  companies: companiesRouter,
  activities: activitiesRouter,
  pipeline: pipelineRouter,
  pipelines: pipelinesRouter,
  search: searchRouter,
  usage: usageRouter,
  webhooks: webhooksRouter,
  events: eventsRouter,
  ai: aiRouter,
  customFields: customFieldsRouter,
  views: viewsRouter,
});
export type AppRouter = typeof appRouter;
