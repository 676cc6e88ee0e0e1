import type { Config } from '@crm/config';
import type { Orm } from '@crm/db';
import { createDashboardAuth } from './admin/dashboard-auth.ts';
import type { Services } from './context.ts';
import { Limits } from './limits/limits.ts';
import type { Log } from './limits/log.ts';

/** What every door needs to serve calls on an open database: the server and `crm mcp` build it the same way. */
export async function createServices(orm: Orm, config: Config, log: Log): Promise<Services> {
  const limits = await Limits.create(config.limits, orm, log);
  try {
    return { orm, config, limits, dashboardAuth: await createDashboardAuth(orm, config, log), log };
  } catch (err) {
    await limits.close();
    throw err;
  }
}
