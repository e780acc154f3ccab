import { expect, Page, test } from '@playwright/test';
import * as path from 'path';
import { fillLoadbalancer, hydrated, requestAddress, signedIn, users } from '../tests/helpers';

// The screenshots of the README, taken on a server with a little data made through the pages.
const shots = path.resolve(__dirname, '../../docs/screenshots');

test.use({ viewport: { width: 1280, height: 760 } });

async function shoot(page: Page, name: string) {
  await hydrated(page);
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

test('screenshots of the load balancer and address request screens', async ({ page }) => {
  await signedIn(page, users.admin);
  await page.goto('/loadbalancers/new');
  await hydrated(page);
  await fillLoadbalancer(page, 'region01-dmz', undefined, 'https://ltm-dmz.bank.example/mgmt/shared/appsvcs');
  await page.getByLabel('Partition (AS3 tenant)').fill('region01_dmz');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/loadbalancers\/region01-dmz$/);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login/);

  await signedIn(page, users.alice);
  for (const [name, ns] of [['shop-web', 'acp-region01/team-a'], ['shop-api', 'acp-region01/team-a'], ['intranet', 'acp-region01/default']]) {
    await requestAddress(page, name, ns);
    await expect(page.getByTestId('phase').first()).toHaveText('Enabled', { timeout: 30_000 });
  }
  await shoot(page, 'ticket-detail');
  await page.goto('/tickets');
  await expect(page.getByRole('link', { name: 'shop-web' })).toBeVisible();
  await shoot(page, 'tickets');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login/);

  await signedIn(page, users.admin);
  await page.goto('/loadbalancers');
  await expect(page.getByRole('link', { name: 'region01-dmz' })).toBeVisible();
  await shoot(page, 'loadbalancers');
  await page.goto('/loadbalancers/region01-dmz/edit');
  await expect(page.getByLabel('VE CIDR')).toBeDisabled();
  await shoot(page, 'loadbalancer-edit');
});

test.describe('in Chinese', () => {
  test.use({ locale: 'zh-CN' });

  test('screenshots of the address requests and a listener on BIG-IP, in Chinese', async ({ page }) => {
    // NB: the sign-in page speaks the browser's language; the labels are the dictionary's.
    const zh = (key: string) => require('../../app/locales/zh-CN/' + key.split('.')[0] + '.json')[key] as string;
    await page.goto('/login');
    await hydrated(page);
    await page.getByLabel(zh('common.login.username')).fill(users.alice.name);
    await page.getByLabel(zh('common.login.password')).fill(users.alice.password);
    await page.getByRole('button', { name: zh('common.login.submit') }).click();
    await expect(page.getByTestId('current-user')).toHaveText(users.alice.display);
    await page.goto('/listeners/shop-web/new');
    await hydrated(page);
    await page.getByLabel(zh('listeners.field.name'), { exact: true }).fill('web');
    await page.getByLabel(zh('listeners.field.port'), { exact: true }).fill('80');
    await page.getByRole('button', { name: zh('common.services.add') }).click();
    await page.getByLabel(zh('common.services.service').replace('{n}', '1'), { exact: true }).selectOption('web-v1');
    await page.getByRole('button', { name: zh('common.save') }).click();
    await expect(page).toHaveURL(/\/listeners\/shop-web\/web$/);
    await expect(page.getByTestId('on-bigip')).toHaveText(zh('bigip.live'), { timeout: 30_000 });
    await shoot(page, 'listener-zh');
    await page.goto('/tickets');
    await expect(page.getByRole('link', { name: 'shop-web' })).toBeVisible();
    await shoot(page, 'tickets-zh');
  });
});
