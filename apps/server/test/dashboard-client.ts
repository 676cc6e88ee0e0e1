import { type AdminRouter, createPerson } from '@crm/api';
import type { UserRole } from '@crm/db';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { TestServer } from './harness.ts';

/** A browser's view of the dashboard: its session cookie, sent with the dashboard's own Origin. */
export interface DashboardUser {
  email: string;
  password: string;
  cookie: string;
  trpc: ReturnType<typeof createTRPCClient<AdminRouter>>;
}

let people = 0;

/** A person in `orgId`, made the way the CLI makes them. */
export async function addPerson(
  s: TestServer,
  orgId: string,
  role: UserRole = 'admin',
): Promise<{ user_id: string; email: string; password: string }> {
  people += 1;
  return createPerson(
    s.running.db.orm.em.fork(),
    { orgId, email: `person${people}-${Date.now()}@example.com`, role },
    { actor: 'CLI' },
  );
}

export function signInRequest(s: TestServer, email: string, password: string): Promise<Response> {
  return fetch(`${s.url}/admin/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: s.url },
    body: JSON.stringify({ email, password }),
  });
}

export function sessionCookie(res: Response): string {
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('crm.session_token='));
  if (!cookie) throw new Error(`no session cookie (status ${res.status})`);
  return cookie.split(';')[0] as string;
}

export function dashboardClient(s: TestServer, cookie: string, origin: string = s.url) {
  return createTRPCClient<AdminRouter>({
    links: [httpLink({ url: `${s.url}/admin/trpc`, headers: () => ({ cookie, origin }) })],
  });
}

export async function signIn(s: TestServer, email: string, password: string): Promise<DashboardUser> {
  const res = await signInRequest(s, email, password);
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const cookie = sessionCookie(res);
  return { email, password, cookie, trpc: dashboardClient(s, cookie) };
}

/** A new person of `role` in `orgId`, signed in. */
export async function signedIn(
  s: TestServer,
  orgId: string,
  role: UserRole = 'admin',
): Promise<DashboardUser> {
  const person = await addPerson(s, orgId, role);
  return signIn(s, person.email, person.password);
}

/** The HTTP status and contract code a dashboard call failed with. */
export async function failure(
  call: Promise<unknown>,
): Promise<{ status: number; code: string; message: string }> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof TRPCClientError)) throw err;
    const data = err.data as { httpStatus: number; body: { code: string } } | undefined;
    return { status: data?.httpStatus ?? 0, code: data?.body.code ?? '', message: err.message };
  }
  throw new Error('the call succeeded');
}
