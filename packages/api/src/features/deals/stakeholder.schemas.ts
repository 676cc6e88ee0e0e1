import { z } from 'zod';
import { DateTimeOut, Uuid } from '../../schemas.ts';
import { EngagementLevel, InfluenceLevel, RoleType, Sentiment } from '../contacts/contact.schemas.ts';

export const StakeholderPath = z.strictObject({
  id: Uuid.describe('The deal'),
  contact_id: Uuid.describe('The contact'),
});

/** The body of `PUT /deals/{id}/stakeholders/{contact_id}`: the link's role; left out, a field keeps its value. */
export const StakeholderLinkInput = z
  .strictObject({
    role_type: RoleType.optional().describe('Its role on this deal; `unknown` when a new link leaves it out'),
    influence_level: InfluenceLevel.nullable().optional(),
    engagement_level: EngagementLevel.nullable().optional(),
    sentiment: Sentiment.nullable().optional(),
    is_primary: z.boolean().optional().describe('The deal’s primary contact: at most one per deal'),
  })
  .meta({
    id: 'StakeholderLinkRequest',
    examples: [{ role_type: 'influencer', influence_level: 'high', engagement_level: 'medium' }],
  });
export type StakeholderLinkInput = z.infer<typeof StakeholderLinkInput>;

/** A contact's link to a deal, with its role there. */
export const StakeholderLink = z
  .object({
    deal_id: Uuid,
    contact_id: Uuid,
    role_type: RoleType,
    influence_level: InfluenceLevel.nullable(),
    engagement_level: EngagementLevel.nullable(),
    sentiment: Sentiment.nullable(),
    is_primary: z.boolean(),
    own_deal: z
      .boolean()
      .describe('The contact’s own deal (its `deal_id`): the link’s role is the contact’s own fields'),
    linked_at: DateTimeOut,
  })
  .meta({ id: 'StakeholderLink' });
export type StakeholderLinkDto = z.infer<typeof StakeholderLink>;

export const ContactDeal = StakeholderLink.extend({
  title: z.string(),
  stage_name: z.string().nullable(),
  stage_type: z.string().nullable(),
}).meta({ id: 'ContactDeal' });

export const ContactDealsQuery = z.strictObject({ id: Uuid.describe('The contact') });
