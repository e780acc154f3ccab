import { expect, test } from './fixtures';
import { kubectl, postedTenant } from '../server';
import { hydrated, requestAddress, signedIn, users } from './helpers';

// One story, in order: a tenant puts a listener on an Enabled address, previews what it does to
// the AS3 declaration, saves it and watches the member cluster carry it.
test.describe.configure({ mode: 'serial' });

test('a tenant adds a listener with two weighted services, previews it, and the member cluster carries it', async ({
  page,
}) => {
  await signedIn(page, users.alice);
  await requestAddress(page, 'l-shop', 'acp-region01/default', '', 'listener', 'shared-lb');
  const badge = page.getByRole('heading', { name: /Address request l-shop/ }).getByTestId('phase');
  await expect(badge).toHaveText('Enabled', { timeout: 20_000 });
  await page.getByRole('button', { name: 'Add listener' }).click();
  await expect(page).toHaveURL(/\/listeners\/l-shop\/new$/);
  await hydrated(page);

  await page.getByLabel('Name', { exact: true }).fill('web');
  await page.getByLabel('Port', { exact: true }).fill('80');
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 1', { exact: true }).selectOption('web-v1');
  await page.getByLabel('Port 1', { exact: true }).selectOption('8080');
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 2', { exact: true }).selectOption('web-v2');
  await page.getByLabel('Weight 1').fill('60');
  await expect(page.getByTestId('weight-sum')).toHaveText(/add up to 60;/);
  await page.getByLabel('Weight 2').fill('40');
  await expect(page.getByTestId('weight-sum')).toHaveText(/add up to 100;/);
  await expect(page.locator('.split-part')).toHaveText(['web-v1 60%', 'web-v2 40%']);

  await page.getByRole('button', { name: 'Preview AS3' }).click();
  const diff = page.getByTestId('diff');
  await expect(diff).toContainText('vs_l-shop_80');
  await expect(diff.locator('.diff-add').filter({ hasText: 'web-v2' }).first()).toBeVisible();
  await expect(page.getByTestId('preview-refused')).toHaveCount(0);

  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/listeners\/l-shop\/web$/);
  await expect(page.getByTestId('carried')).toHaveText('In the cluster', { timeout: 20_000 });
  await expect(page.getByTestId('deployed')).toContainText('virtualAddresses');
  await expect(page.getByTestId('deployed')).toContainText('20.9.0.');
  // What the member cluster's CIS will post carries it, its pools filled from the Endpoints.
  await expect
    .poll(() => {
      const app = postedTenant('shared')?.['default_http_app'];
      return [app?.['vs_l-shop_80']?.class, app?.['web-v2_8080_pool']?.members?.length > 0];
    }, { timeout: 20_000 })
    .toEqual(['Service_HTTP', true]);
});

test('a used Service is not offered again, port and protocol are locked on edit, Disable says why', async ({
  page,
}) => {
  await signedIn(page, users.alice, '/listeners/l-shop/new');
  await page.getByRole('button', { name: '+ Add service' }).click();
  const offered = await page.getByLabel('Service 1', { exact: true }).locator('option').allTextContents();
  expect(offered).not.toContain('web-v1');
  expect(offered).not.toContain('web-v2');
  expect(offered).toContain('api');

  await page.goto('/listeners/l-shop/web/edit');
  await hydrated(page);
  await expect(page.getByLabel('Port', { exact: true })).toBeDisabled();
  await expect(page.getByLabel('Protocol')).toBeDisabled();
  await expect(page.getByLabel('Port', { exact: true })).toHaveValue('80');

  await page.goto('/listeners');
  await hydrated(page);
  const group = page.getByRole('region', { name: 'Address request l-shop' });
  await expect(group.getByRole('link', { name: 'web' })).toBeVisible();

  await page.goto('/tickets/l-shop');
  await hydrated(page);
  const disable = page.getByRole('button', { name: 'Disable' });
  await expect(disable).toBeDisabled();
  await expect(disable).toHaveAttribute('title', /1 listener off the load balancer/);
});

// Until the Rules screen exists, the rule comes the other way lbdesk accepts one: kubectl.
const canary = `
apiVersion: ebcpaas.io/v1
kind: Lbrule
metadata: {name: l-shop-canary}
spec:
  lbticket: l-shop
  listener: web
  priority: 10
  services: [{service: web-v2, port: 8080, weight: 100}]
  rules: [{type: header, key: X-Canary, values: [{operator: equal, value: "1"}]}]
`;

test("another project's tenant sees none of it", async ({ page }) => {
  await signedIn(page, users.bob, '/listeners');
  await expect(page.getByText('No address for listeners yet.')).toBeVisible();
  await expect(page.getByText('l-shop')).toHaveCount(0);
  await page.goto('/listeners/l-shop/web');
  await hydrated(page);
  await expect(page.getByRole('alert').filter({ hasText: 'There is no such address request in your projects.' })).toBeVisible();
});

test('delete waits while a rule is on the listener, then asks first', async ({ page }) => {
  await signedIn(page, users.alice);
  kubectl(['apply', '-f', '-'], canary);
  await page.goto('/listeners/l-shop/web');
  await hydrated(page);
  const del = page.getByRole('button', { name: 'Delete' });
  await expect(del).toBeDisabled();
  await expect(del).toHaveAttribute('title', 'This listener has 1 rule; delete it first.');

  kubectl(['delete', 'lbrule', 'l-shop-canary']);
  await page.reload();
  await hydrated(page);
  await expect(del).toBeEnabled();
  await del.click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Delete listener web?');
  await dialog.getByRole('button', { name: 'Yes, delete' }).click();
  await expect(page).toHaveURL(/\/listeners$/);
  const group = page.getByRole('region', { name: 'Address request l-shop' });
  await expect(group.getByText('No listener yet.')).toBeVisible();
  await expect(group.getByRole('link', { name: 'web' })).toHaveCount(0);
});
