// What `crm schema types --org <id>` prints (apps/cli/test/schema.test.ts compiles a real one).
export type OrgFields = {
  deals: {
    /** ARR: currency, required */
    arr: { type: 'currency'; required: true };
    /** Region: select */
    region: { type: 'select'; options: 'emea' | 'apac'; archivedOptions: 'amer' };
    /** Tags: multi_select */
    tags: { type: 'multi_select'; options: 'vip' | 'partner' };
    /** Tier: select, required, with a default */
    tier: { type: 'select'; required: true; defaulted: true; options: 'gold' | 'silver' };
    /** Signed on: date */
    signed_on: { type: 'date' };
    /** Renews: boolean */
    renews: { type: 'boolean' };
    /** Extra: json */
    extra: { type: 'json' };
    /** Legacy code: text, archived */
    legacy_code: { type: 'text'; archived: true };
  };
  contacts: {
    /** Seniority: number */
    seniority: { type: 'number' };
  };
  companies: {
    /** Segment: select, required */
    segment: { type: 'select'; required: true; options: 'smb' | 'enterprise' };
  };
};
