import { z } from 'zod';
import { DateTimeOut, Uuid } from '../../schemas.ts';
import { LoggedActivity } from '../activities/activity.schemas.ts';
import { ContactDeal } from '../deals/stakeholder.schemas.ts';
import { Contact } from './contact.schemas.ts';

/** `GET /contacts/{id}/export`: what the organization holds about a person. */
export const ContactExport = z
  .object({
    exported_at: DateTimeOut,
    contact: Contact,
    deals: z.array(ContactDeal),
    activities: z.array(
      z.object({
        id: Uuid,
        deal_id: Uuid,
        type: z.string(),
        description: z.string().nullable(),
        changes: z
          .record(z.string(), z.unknown())
          .nullable()
          .describe('What changed: field to its from and to'),
        created_at: DateTimeOut,
      }),
    ),
    logged_activities: z
      .array(LoggedActivity)
      .describe('The notes, calls, meetings, e-mails and tasks linked to the contact, oldest first'),
    events: z.array(z.record(z.string(), z.unknown())).describe('As GET /events answers them, oldest first'),
  })
  .meta({ id: 'ContactExport' });

/** `POST /contacts/{id}/erase`: that the person was erased and what went, without personal data. */
export const ErasureReceipt = z
  .object({
    id: Uuid,
    contact_id: Uuid,
    erased_at: DateTimeOut,
    removed: z.record(z.string(), z.number().int()),
  })
  .meta({ id: 'ErasureReceipt' });
