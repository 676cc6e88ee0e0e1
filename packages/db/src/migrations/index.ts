import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';

/** Listed explicitly (no folder scan): the same list runs on PGlite and on PostgreSQL. */
export const migrationsList = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
];
