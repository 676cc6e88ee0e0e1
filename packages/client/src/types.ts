import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from './router.gen.ts';

/** Every procedure's input: `RouterInputs['deals']['create']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** Every procedure's output: `RouterOutputs['deals']['get']`. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** A deal as the API answers it (lists, creates, updates, webhooks). */
export type Deal = RouterOutputs['deals']['create']['data'];
/** A contact as the API answers it. */
export type Contact = RouterOutputs['contacts']['create']['data'];
/** A company as the API answers it. */
export type Company = RouterOutputs['companies']['create']['data'];
/** A contact's link to a deal, with its role there (`PUT /deals/{id}/stakeholders/{contact_id}`). */
export type StakeholderLink = RouterOutputs['deals']['linkStakeholder']['data'];
/** A logged activity (note, task, call, meeting, e-mail) as the API answers it. */
export type LoggedActivity = RouterOutputs['activities']['create']['data'];
/** A saved view (a named filter and sort of one list) as `POST /views` answers it. */
export type SavedView = RouterOutputs['views']['create']['data'];
/** A MEDDPICC analysis as `POST /deals/{id}/analyze` answers it. */
export type Analysis = RouterOutputs['ai']['analyze']['data'];
/** The kinds of event a webhook endpoint can subscribe to. */
export type WebhookEventType = RouterInputs['webhooks']['create']['events'][number];
