import { expect, test } from './fixtures';
import { kubectl, postedTenant } from '../server';
import { hydrated, requestAddress, signedIn, users } from './helpers';

// One story, in order: a tenant serves an F5 Ingress on an Enabled address of type ingress, finds
// it in the member cluster as CIS needs it, and takes the address out of service.
test.describe.configure({ mode: 'serial' });

/** The Ingress `name` of namespace default in member cluster acp-region01, as kubectl reads it. */
function memberIngress(name: string): {
  metadata: { annotations: Record<string, string>; labels: Record<string, string> };
  spec: { ingressClassName?: string };
} {
  return JSON.parse(kubectl(['--context', 'acp-region01', 'get', 'ingress', name, '-n', 'default', '-o', 'json']));
}

/** The Ingresses lbdesk wrote for request `ticket` in member cluster acp-region01. */
function ingressesOf(ticket: string): string {
  return kubectl(['--context', 'acp-region01', 'get', 'ingress', '-A', '-l', `ebcpaas.io/lbticket=${ticket}`, '-o', 'name']);
}

test('a tenant adds an F5 Ingress; the member cluster holds it with the annotations, class and label CIS needs', async ({
  page,
}) => {
  await signedIn(page, users.alice);
  await requestAddress(page, 'i-shop', 'acp-region01/default', '', 'ingress', 'shared-lb');
  const badge = page.getByRole('heading', { name: /Address request i-shop/ }).getByTestId('phase');
  await expect(badge).toHaveText('Enabled', { timeout: 20_000 });
  const veip = (await page.getByTestId('veip').textContent())?.trim() ?? '';
  expect(veip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  await expect(page.getByRole('button', { name: 'Add listener' })).toHaveCount(0);
  await page.getByRole('button', { name: 'Add F5 Ingress' }).click();
  await expect(page).toHaveURL(/\/ingresses\/i-shop\/new$/);
  await hydrated(page);

  await page.getByLabel('Name', { exact: true }).fill('shop');
  await page.getByLabel('Host 1').fill('shop.example.com');
  await page.getByLabel('Path 1').fill('/');
  await page.getByLabel('Service 1', { exact: true }).selectOption('api-canary');
  await expect(page.getByTestId('annotations')).toContainText(`virtual-server.f5.com/ip: ${veip}`);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ingresses\/i-shop\/shop$/);
  await expect(page.getByTestId('carried')).toHaveText('In the cluster', { timeout: 20_000 });
  await expect(page.getByTestId('deployed')).toContainText(veip);

  const ingress = memberIngress('shop');
  expect(ingress.metadata.annotations['virtual-server.f5.com/ip']).toBe(veip);
  expect(ingress.metadata.annotations['virtual-server.f5.com/partition']).toBe('shared_ingress');
  expect(ingress.metadata.annotations['kubernetes.io/ingress.class']).toBe('f5');
  expect(ingress.spec.ingressClassName).toBe('f5');
  expect(ingress.metadata.labels['ebcpaas.io/lbticket']).toBe('i-shop');
  // What CIS will post: the Ingress's virtual server on the address, its pool with members.
  const vs = `ingress_${veip.replaceAll('.', '_')}_80`;
  await expect
    .poll(() => {
      const shared = postedTenant('shared_ingress')?.['Shared'] ?? {};
      const pool = shared['ingress_default_shop_api_canary_8080'];
      return [shared[vs]?.virtualAddresses, pool?.members?.length > 0];
    }, { timeout: 20_000 })
    .toEqual([[veip], true]);

  await page.goto('/ingresses');
  await hydrated(page);
  const group = page.getByRole('region', { name: 'Address request i-shop' });
  await expect(group.getByRole('link', { name: 'shop', exact: true })).toBeVisible();
  await expect(group).toContainText('shop.example.com');
});

test('Disable says why while the address serves an F5 Ingress; deleting it, then disabling, withdraws everything', async ({
  page,
}) => {
  await signedIn(page, users.alice, '/tickets/i-shop');
  const disable = page.getByRole('button', { name: 'Disable' });
  await expect(disable).toBeDisabled();
  await expect(disable).toHaveAttribute('title', /F5 Ingress/);

  await page.goto('/ingresses/i-shop/shop');
  await hydrated(page);
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Delete F5 Ingress shop?');
  await dialog.getByRole('button', { name: 'Yes, delete' }).click();
  await expect(page).toHaveURL(/\/ingresses$/);
  await expect.poll(() => ingressesOf('i-shop'), { timeout: 20_000 }).toBe('');

  await page.goto('/tickets/i-shop');
  await hydrated(page);
  await expect(disable).toBeEnabled();
  await disable.click();
  const badge = page.getByRole('heading', { name: /Address request i-shop/ }).getByTestId('phase');
  await expect(badge).toHaveText('Disabled', { timeout: 15_000 });
  expect(ingressesOf('i-shop')).toBe('');
  expect(postedTenant('shared_ingress')?.['Shared']?.['ingress_default_shop_api_canary_8080']).toBeUndefined();
});

test("another project's tenant sees none of it", async ({ page }) => {
  await signedIn(page, users.bob, '/ingresses');
  await expect(page.getByText('No address for F5 Ingresses yet.')).toBeVisible();
  await page.goto('/ingresses/i-shop/shop');
  await hydrated(page);
  await expect(page.getByRole('alert').filter({ hasText: 'There is no such address request in your projects.' })).toBeVisible();
});
