import { Page, Response } from '@playwright/test';
import { expect, test } from './fixtures';
import { hydrated, signedIn, users } from './helpers';

// The Content-Security-Policy allows only lbdesk's own scripts, its WebAssembly and the page's
// nonce: every screen must still hydrate and work under it, with no violation reported.

type Watched = { cspViolations: string[] };

/**
 * Collects what would show the policy getting in the way: CSP violation events of every document,
 * any console message about the policy, console errors, and uncaught page errors. NB: a page that
 * answers 403 or 404 by design logs its own status; that is not a problem here.
 */
async function watch(page: Page): Promise<string[]> {
  const problems: string[] = [];
  page.on('console', (m) => {
    const text = m.text();
    const policy = /Content Security Policy|Refused to/i.test(text);
    const ownStatus = /^Failed to load resource: the server responded with a status of 40[34]/.test(text)
      && m.location().url === page.url();
    if (policy || (m.type() === 'error' && !ownStatus)) {
      problems.push(`console ${m.type()}: ${text} (${m.location().url})`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message} (${page.url()})`));
  await page.addInitScript(() => {
    const w = window as unknown as Watched;
    w.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      w.cspViolations.push(`${e.violatedDirective}: ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  return problems;
}

/** The policy of a page's response, and the nonce it allows. */
function policy(response: Response | null): { csp: string; nonce: string } {
  const csp = response?.headers()['content-security-policy'] ?? '';
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1] ?? '';
  return { csp, nonce };
}

/** Opens `path`, waits until it has hydrated, and checks the policy held without complaint. */
async function open(page: Page, path: string, problems: string[]) {
  const response = await page.goto(path);
  const { csp, nonce } = policy(response);
  expect(csp, path).toContain("script-src 'self' 'nonce-");
  expect(csp, path).toContain("frame-ancestors 'none'");
  expect(response?.headers()['x-content-type-options'], path).toBe('nosniff');
  await hydrated(page);
  // The hydration script ran because it carries the response's nonce (the browser hides the
  // attribute from the DOM after checking it; the property keeps it).
  const nonces = await page.evaluate(() => [...document.scripts].filter((s) => !s.src).map((s) => s.nonce));
  expect(nonces.length, path).toBeGreaterThan(0);
  for (const n of nonces) {
    expect(n, `${path}: an inline script without the page's nonce`).toBe(nonce);
  }
  await checkClean(page, path, problems);
}

async function checkClean(page: Page, what: string, problems: string[]) {
  // NB: violation events are queued; give them a moment to arrive.
  await page.waitForTimeout(100);
  const violations = await page.evaluate(() => (window as unknown as Watched).cspViolations ?? []);
  expect(violations, `${what}: CSP violations`).toEqual([]);
  expect(problems, `${what}: console`).toEqual([]);
}

/** A click on the main navigation routes in the browser: the page is live. */
async function navigate(page: Page, link: string, heading: string, problems: string[]) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).click();
  await expect(page.getByRole('heading', { level: 1, name: heading, exact: true })).toBeVisible();
  await checkClean(page, `${link} (navigated)`, problems);
}

test('the sign-in page hydrates and signs in under the policy', async ({ page }) => {
  const problems = await watch(page);
  await open(page, '/login', problems);
  await page.getByLabel('User name').fill(users.admin.name);
  await page.getByLabel('Password').fill(users.admin.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('current-user')).toHaveText(users.admin.display);
  await checkClean(page, 'after sign-in', problems);
});

test('every screen of an admin loads, hydrates and responds with no policy violation', async ({ page }) => {
  const problems = await watch(page);
  await signedIn(page, users.admin);
  for (const path of [
    '/tickets',
    '/tickets/new',
    '/tickets/no-such-request',
    '/loadbalancers',
    '/loadbalancers/new',
    '/loadbalancers/shared-lb',
    '/loadbalancers/shared-lb/edit',
    '/listeners',
    '/rules',
    '/ingresses',
    '/no-such-page',
  ]) {
    await open(page, path, problems);
  }
  await open(page, '/loadbalancers', problems);
  await navigate(page, 'Address requests', 'Address requests', problems);
  await navigate(page, 'Listeners', 'Listeners', problems);
  await navigate(page, 'Rules', 'Rules', problems);
  await navigate(page, 'F5 Ingress', 'F5 Ingresses', problems);
  await navigate(page, 'Load balancers', 'Load balancers', problems);
  // A screen's own controls respond.
  await page.getByLabel('Search load balancers').fill('no-such-load-balancer');
  await expect(page.locator('table.table tbody tr')).toHaveCount(0);
  await page.getByRole('link', { name: 'New load balancer' }).click();
  await expect(page).toHaveURL(/\/loadbalancers\/new$/);
  await expect(page.getByLabel('Name', { exact: true })).toBeEditable();
  await checkClean(page, 'the new-load-balancer form', problems);
});

test('every screen of a tenant loads, hydrates and responds with no policy violation', async ({ page }) => {
  const problems = await watch(page);
  await signedIn(page, users.alice);
  for (const path of ['/tickets', '/tickets/new', '/listeners', '/rules', '/ingresses', '/loadbalancers']) {
    await open(page, path, problems);
  }
  await open(page, '/tickets', problems);
  await navigate(page, 'Listeners', 'Listeners', problems);
  await navigate(page, 'Address requests', 'Address requests', problems);
  await page.getByRole('link', { name: 'Request an address' }).click();
  await expect(page).toHaveURL(/\/tickets\/new$/);
  await expect(page.getByLabel('Name', { exact: true })).toBeEditable();
  await checkClean(page, 'the request form', problems);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login/);
  await checkClean(page, 'after sign-out', problems);
});
