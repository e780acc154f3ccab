import { Cookie, expect, Page } from '@playwright/test';

/** The demo logins of `lbdesk serve --demo`. */
export const users = {
  admin: { name: 'admin', password: 'admin-demo', display: 'Platform Admin' },
  alice: { name: 'alice', password: 'alice-demo', display: 'Alice Tenant' },
  bob: { name: 'bob', password: 'bob-demo', display: 'Bob Tenant' },
};

/** Waits until the page is interactive (hydrated), so clicks reach the app. */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
}

/** Signs in through the sign-in page as a person would. */
export async function signIn(page: Page, user: { name: string; password: string }, path = '/login') {
  await page.goto(path);
  await hydrated(page);
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The sessions of the demo's users this worker has signed in (each worker is a process of its
 * own): no test ends theirs (users.spec.ts ends dora's), so one sign-in per worker serves every
 * later test. */
const sessions = new Map<string, Cookie[]>();

/**
 * Opens `at` signed in as `user` and waits until the signed-in frame shows who it is and the
 * page has hydrated. A demo user's first time in this worker signs in on the sign-in page, then
 * opens `at`; later tests open `at` in that session at once: one page load instead of three (the
 * sign-in page, the landing page, then `at`), in a suite whose time is Chromium's page loads
 * (docs/perf.md).
 * Signing in itself is tested where it is the story (shell.spec.ts, first-load.spec.ts,
 * directory.spec.ts, i18n.spec.ts).
 */
export async function signedIn(page: Page, user: { name: string; password: string; display: string }, at = '/') {
  const demo = Object.values(users).some((u) => u.name === user.name);
  const session = demo ? sessions.get(user.name) : undefined;
  if (session) {
    await page.context().addCookies(session);
    await page.goto(at);
  } else {
    // NB: signed in once the frame says so; only then are the session's cookies there to keep.
    await signIn(page, user);
    await expect(page.getByTestId('current-user')).toHaveText(user.display);
    if (demo) {
      sessions.set(user.name, await page.context().cookies());
    }
    if (at !== '/') {
      await page.goto(at);
    }
  }
  await expect(page.getByTestId('current-user')).toHaveText(user.display);
  // NB: the frame is drawn by the server; a click before hydration is a plain link's, a whole
  // page load (a test of routing in the browser once failed so, with three workers).
  await hydrated(page);
}

/** Fills the new-load-balancer form: LTM and VE of the demo, cluster acp-region01, zone=f5.
 * NB: two load balancers on one LTM or VE must have ranges apart: a test of its own gives its
 * own `ltmUrl` and `veAddr`. */
export async function fillLoadbalancer(
  page: Page,
  name: string,
  secrets = { token: 'token', user: 'user', password: 'password' },
  ltmUrl = 'http://100.1.1.1/api',
  veAddr = '200.1.1.1',
) {
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('LTM URL').fill(ltmUrl);
  await page.getByLabel('LTM token').fill(secrets.token);
  await page.getByLabel('LTM CIDR').fill('10.0.0.0/24');
  await page.getByLabel('VE address').fill(veAddr);
  await page.getByLabel('VE user').fill(secrets.user);
  await page.getByLabel('VE password').fill(secrets.password);
  await page.getByLabel('VE CIDR').fill('20.1.0.0/16');
  await page.getByLabel('Cluster').selectOption('acp-region01');
  await page.getByRole('button', { name: '+ Add' }).click();
  await page.getByLabel('Key 1').fill('zone');
  await page.getByLabel('Value 1').fill('f5');
}

/** Opens the request form and fills it in, as a tenant, without sending it; on `loadbalancer`
 * when given, else on the first one offered. */
export async function fillRequest(
  page: Page,
  name: string,
  namespace: string,
  veip = '',
  lbtype = 'listener',
  loadbalancer = '',
) {
  await page.goto('/tickets/new');
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Namespace').selectOption(namespace);
  if (loadbalancer) {
    await page.getByLabel('Load balancer').selectOption(loadbalancer);
  }
  await page.getByLabel('Type').selectOption(lbtype);
  if (veip) {
    await page.getByLabel('VE IP').fill(veip);
  }
}

/** Adds listener `name` on `port` with one Service to request `ticket`, through the listener
 * form (its protocol when given, else the form's default), and lands on its page. */
export async function addListener(
  page: Page,
  ticket: string,
  name: string,
  port: string,
  service: string,
  protocol?: string,
) {
  await page.goto(`/listeners/${ticket}/new`);
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Port', { exact: true }).fill(port);
  if (protocol) {
    await page.getByLabel('Protocol').selectOption(protocol);
  }
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 1', { exact: true }).selectOption(service);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(new RegExp(`/listeners/${ticket}/${name}$`));
}

/** The list screens: their link in the main navigation, their path and heading. */
export const screens = {
  loadbalancers: { link: 'Load balancers', path: '/loadbalancers', heading: 'Load balancers' },
  tickets: { link: 'Address requests', path: '/tickets', heading: 'Address requests' },
  listeners: { link: 'Listeners', path: '/listeners', heading: 'Listeners' },
  rules: { link: 'Rules', path: '/rules', heading: 'Rules' },
  ingresses: { link: 'F5 Ingress', path: '/ingresses', heading: 'F5 Ingresses' },
};

/** Requests an address through the form, as a tenant, and lands on its page. */
export async function requestAddress(
  page: Page,
  name: string,
  namespace: string,
  veip = '',
  lbtype = 'listener',
  loadbalancer = '',
) {
  await fillRequest(page, name, namespace, veip, lbtype, loadbalancer);
  await page.getByRole('button', { name: 'Request' }).click();
  await expect(page).toHaveURL(new RegExp(`/tickets/${name}$`));
}
