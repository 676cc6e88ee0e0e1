import { lazy, Suspense } from 'react';
import { Redirect, Route, Switch } from 'wouter';
import { Shell } from './components/Shell.tsx';
import { Loading } from './components/States.tsx';
import { AccountPage } from './pages/Account.tsx';
import { AuditPage } from './pages/Audit.tsx';
import { InvitePage } from './pages/Invite.tsx';
import { KeysPage } from './pages/Keys.tsx';
import { NotFoundPage } from './pages/NotFound.tsx';
import { SignInPage } from './pages/SignIn.tsx';
import { TeamPage } from './pages/Team.tsx';
import { WebhookDeliveriesPage } from './pages/WebhookDeliveries.tsx';
import { WebhooksPage } from './pages/Webhooks.tsx';
import { HOME } from './session.ts';

// The usage page carries Chart.js: load it when it is visited.
const UsagePage = lazy(() => import('./pages/Usage.tsx'));
// Fields is an admin's occasional page (5.8 KB gzipped): not on the first page's load either.
const FieldsPage = lazy(() => import('./pages/Fields.tsx'));

export function App() {
  return (
    <Switch>
      <Route path="/sign-in" component={SignInPage} />
      <Route path="/invite/:token" component={InvitePage} />
      <Route>
        <Shell>
          <Switch>
            <Route path="/">
              <Redirect to={HOME} replace />
            </Route>
            <Route path="/keys" component={KeysPage} />
            <Route path="/usage">
              <Suspense fallback={<Loading />}>
                <UsagePage />
              </Suspense>
            </Route>
            <Route path="/webhooks" component={WebhooksPage} />
            <Route path="/webhooks/:id" component={WebhookDeliveriesPage} />
            <Route path="/fields">
              <Suspense fallback={<Loading />}>
                <FieldsPage />
              </Suspense>
            </Route>
            <Route path="/team" component={TeamPage} />
            <Route path="/audit" component={AuditPage} />
            <Route path="/account" component={AccountPage} />
            <Route component={NotFoundPage} />
          </Switch>
        </Shell>
      </Route>
    </Switch>
  );
}
