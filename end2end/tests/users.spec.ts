import { expect, test } from './fixtures';
import { hydrated, signedIn, users } from './helpers';

// An admin ends a user's sessions from the Users page (issue #27): the user, signed in in
// another browser, is led to sign-in at their next click; a tenant is not offered the page.

// NB: dora, a directory tenant no other spec signs in as: ending a user's sessions signs them
// out of every browser, other specs' running at the same time included.
const dora = { name: 'dora', password: 'dora-directory', display: 'Dora Directory' };

test('an admin ends dora’s sessions: each of her open pages leads to sign-in', async ({ page, browser }) => {
  const other = await browser.newContext();
  const browsing = await other.newPage();
  await signedIn(browsing, dora);
  const leaving = await other.newPage();
  await leaving.goto('/tickets');
  await hydrated(leaving);

  await signedIn(page, users.admin);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
  await expect(page).toHaveURL(/\/users$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Users' })).toBeVisible();
  const row = page.getByTestId('user-row').filter({ hasText: dora.display });
  await expect(row.locator('td:nth-child(3)')).toHaveText('Directory');
  await expect(row.locator('td:nth-child(5)')).toHaveText('project-a');
  await expect(row.locator('td:nth-child(6)')).toHaveText('never');
  await row.getByRole('button', { name: 'End sessions' }).click();
  await expect(page.getByRole('dialog', { name: 'Confirm' })).toContainText('End every session of dora?');
  await page.getByRole('button', { name: 'Yes, end sessions' }).click();
  await expect(page.getByTestId('sessions-ended')).toBeVisible();
  await expect(row.locator('td:nth-child(6)')).not.toHaveText('never');

  // Her next click leads to sign-in, whether it opens a screen or signs out.
  await browsing.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Listeners' }).click();
  await expect(browsing).toHaveURL(/\/login/);
  await leaving.getByRole('button', { name: 'Sign out' }).click();
  await expect(leaving).toHaveURL(/\/login/);
  await other.close();

  // The change is in the audit log, as the admin's.
  await page.goto('/audit?kind=User');
  await hydrated(page);
  const entry = page.getByTestId('audit-entry').filter({ hasText: 'User dora' });
  await expect(entry.first().locator('td:nth-child(2)')).toHaveText('admin');
  await expect(entry.first().locator('td:nth-child(4)')).toHaveText('end sessions');
});

test('a tenant is not offered the Users page, and opening it says so', async ({ page }) => {
  await signedIn(page, users.alice);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link', { name: 'Audit log' })).toBeVisible();
  await expect(nav.getByRole('link', { name: 'Users' })).toHaveCount(0);
  await page.goto('/users');
  await hydrated(page);
  await expect(page.getByTestId('user-row')).toHaveCount(0);
  await expect(page.getByText('This screen is for platform admins.')).toBeVisible();
});

test('an admin sets a project’s quota on the Users page; its members see what they hold of it', async ({
  page,
  browser,
}) => {
  await signedIn(page, users.admin, '/users');
  const row = page.getByTestId('quota-row').filter({ hasText: 'project-b' });
  await expect(row.getByLabel('Rules of project-b')).toHaveValue('');
  await row.getByLabel('Listeners of project-b').fill('many');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByText('A whole number from 0 to')).toBeVisible();
  await row.getByLabel('Listeners of project-b').fill('');
  await row.getByLabel('Rules of project-b').fill('7');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('quota-saved')).toBeVisible();
  await expect(row.getByLabel('Rules of project-b')).toHaveValue('7');

  const other = await browser.newContext();
  const bob = await other.newPage();
  await signedIn(bob, users.bob, '/tickets');
  await hydrated(bob);
  const quota = bob.getByTestId('quota');
  await expect(quota.locator('dt', { hasText: 'Rules' }).locator('+ dd')).toHaveText(/^\d+ of 7$/);
  await expect(quota.locator('dt', { hasText: 'Listeners' }).locator('+ dd')).toHaveText(/^\d+ \(no limit\)$/);
  await other.close();
});
