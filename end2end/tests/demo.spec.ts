import { expect, test } from './fixtures';
import { hydrated, signedIn, users } from './helpers';

// `--demo` seeds a load balancer offered to every demo project: a newcomer's first visit can
// request an address with no admin step. (Runs first: no test has created a load balancer yet.)

test("a tenant's first visit requests an address on the demo's load balancer", async ({ page }) => {
  await signedIn(page, users.alice);
  await page.getByRole('link', { name: 'Request an address' }).click();
  await expect(page).toHaveURL(/\/tickets\/new$/);
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill('first-visit');
  await page.getByLabel('Namespace').selectOption('acp-region01/default');
  await expect(page.getByLabel('Load balancer')).toHaveValue('shared-lb');
  await page.getByRole('button', { name: 'Request' }).click();
  await expect(page).toHaveURL(/\/tickets\/first-visit$/);
  const badge = page.getByRole('heading', { name: /Address request first-visit/ }).getByTestId('phase');
  await expect(badge).toHaveText('Enabled', { timeout: 15_000 });
  await expect(page.getByTestId('veip')).toHaveText(/^20\.9\.0\.\d+$/);
});
