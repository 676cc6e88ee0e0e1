export type {
  CustomFieldSpec,
  CustomFieldType,
  CustomObject,
  CustomValue,
  CustomValuesCreate,
  CustomValuesOut,
  CustomValuesPatch,
  Filter,
  FilterCondition,
  FilterFields,
  OrgFieldsShape,
  UntypedFields,
} from './custom-fields.ts';
export { CrmError } from './errors.ts';
export type { ClientOptions } from './options.ts';
export { allPages, type CursorPage } from './pages.ts';
export { type CrmResponse, type Quota, type RateLimit, responseOf } from './response.ts';
export { type CrmRestClient, createCrmRestClient, type RestPaths } from './rest.ts';
export type { AppRouter, ErrorBody, ErrorCode } from './router.gen.ts';
export { type CrmClient, createCrmClient } from './trpc.ts';
export type * from './types.ts';
export {
  type FieldChanges,
  type StageRef,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from './webhooks.ts';
