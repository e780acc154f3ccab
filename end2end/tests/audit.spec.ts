import { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { hydrated, requestAddress, signedIn, users } from './helpers';

// The audit log records the changes people make (the demo seed's writes are lbdesk's own and
// are not in it), so alice requests an address and the admin edits the demo's load balancer
// first: an entry of project-a and one of no project, which only admins may see.

const rows = (page: Page) => page.getByTestId('audit-entry');
const column = (page: Page, n: number) => rows(page).locator(`td:nth-child(${n})`);

async function openAuditLog(page: Page) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
  await expect(page).toHaveURL(/\/audit$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Audit log' })).toBeVisible();
}

test('alice requests an address: the change is recorded as hers', async ({ page }) => {
  await signedIn(page, users.alice);
  await requestAddress(page, 'audit-trail', 'acp-region01/team-a');
});

test('an admin browses the log, filters it by user through the URL and expands an entry', async ({ page }) => {
  await signedIn(page, users.admin, '/loadbalancers/shared-lb/edit');
  await page.getByLabel('Reserved addresses').fill('20.9.0.254');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/loadbalancers\/shared-lb$/);

  await openAuditLog(page);
  const request = rows(page).filter({ hasText: 'Lbticket audit-trail' });
  const lb = rows(page).filter({ hasText: 'Loadbalancer shared-lb' });
  await expect(request).toHaveCount(1);
  await expect(request.locator('td:nth-child(2)')).toHaveText('alice');
  await expect(request.locator('td:nth-child(3)')).toHaveText('page');
  await expect(request.locator('td:nth-child(6)')).toHaveText('project-a');
  await expect(lb.first()).toBeVisible();
  await expect(lb.first().locator('td:nth-child(2)')).toHaveText('admin');

  // The filter goes into the URL, so back and bookmarks keep it.
  await hydrated(page);
  await page.getByLabel('User', { exact: true }).fill('alice');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/\/audit\?user=alice&/);
  await expect(lb).toHaveCount(0);
  await expect(request).toHaveCount(1);
  expect(new Set(await column(page, 2).allTextContents())).toEqual(new Set(['alice']));

  // Expanded, an entry shows the object before and after, as text.
  await request.getByText('Before / after').click();
  await expect(request.getByTestId('before')).toHaveText('(none)');
  await expect(request.getByTestId('after')).toContainText('"namespace": "team-a"');
  await expect(request.getByTestId('after')).toContainText('"claimer": "alice"');

  await page.goBack();
  await expect(page).toHaveURL(/\/audit$/);
  await expect(lb.first()).toBeVisible();
  await page.goto('/audit?user=admin&kind=Loadbalancer');
  await hydrated(page);
  await expect(page.getByLabel('User', { exact: true })).toHaveValue('admin');
  await expect(page.getByLabel('Kind')).toHaveValue('Loadbalancer');
  await expect(lb.first()).toBeVisible();
  await expect(request).toHaveCount(0);
  await page.goto('/audit?user=nobody-at-all');
  await expect(page.getByText('No audit entry matches these filters.')).toBeVisible();
});

test("alice sees her project's entries and not the admin's load balancer change", async ({ page }) => {
  await signedIn(page, users.alice);
  await openAuditLog(page);
  await expect(rows(page).filter({ hasText: 'Lbticket audit-trail' })).toHaveCount(1);
  expect(new Set(await column(page, 6).allTextContents())).toEqual(new Set(['project-a']));
  await expect(rows(page).filter({ hasText: 'Loadbalancer shared-lb' })).toHaveCount(0);
  await page.goto('/audit?kind=Loadbalancer');
  await expect(page.getByText('No audit entry matches these filters.')).toBeVisible();
});
