import { expect, test, type Page } from './fixtures';
import { addListener, hydrated, requestAddress, signedIn, users } from './helpers';
import { postedItem } from '../server';

// One story, in order: a tenant puts canary and content rules on a listener, previews the
// iRule, reorders the rules, and meets the checks the server and admission make, as typed.
test.describe.configure({ mode: 'serial' });

/** Fills condition `n` of the rule form. */
async function condition(page: Page, n: number, looksAt: string, operator: string, value: string, key?: string) {
  await page.getByLabel(`Condition ${n} looks at`).selectOption({ label: looksAt });
  if (key !== undefined) await page.getByLabel(`Condition ${n} name`).fill(key);
  await page.getByLabel(`Condition ${n} operator 1`).selectOption(operator);
  await page.getByLabel(`Condition ${n} value 1`).fill(value);
}

test('a tenant adds a header rule and a host rule, previews the iRule, and reorders them', async ({ page }) => {
  await signedIn(page, users.alice);
  // NB: on the demo's load balancer, the one the member cluster's CIS is configured for.
  await requestAddress(page, 'r-shop', 'acp-region01/team-a', '', 'listener', 'shared-lb');
  const badge = page.getByRole('heading', { name: /Address request r-shop/ }).getByTestId('phase');
  await expect(badge).toHaveText('Enabled', { timeout: 20_000 });
  await addListener(page, 'r-shop', 'web', '80', 'web-v1', 'HTTP');
  await page.getByRole('link', { name: 'No rule yet: add one' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web$/);
  await hydrated(page);
  await page.getByRole('button', { name: 'Add rule' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web\/new$/);
  await hydrated(page);

  await page.getByLabel('Name', { exact: true }).fill('canary');
  await condition(page, 1, 'Header', 'is', '1', 'X-Canary');
  await page.getByLabel('Service 1', { exact: true }).selectOption('web-v2');
  await page.getByRole('button', { name: 'Preview AS3' }).click();
  await expect(page.getByTestId('irule')).toContainText('X-Canary');
  await expect(page.getByTestId('diff')).toContainText('vs_r-shop_80_irule');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web\/canary$/);
  await expect(page.getByRole('heading', { name: /Rule canary/ })).toBeVisible();

  await page.getByRole('link', { name: 'web' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web$/);
  await hydrated(page);
  await page.getByRole('button', { name: 'Add rule' }).click();
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill('host');
  await condition(page, 1, 'Host', 'is', 'a.example.com');
  await page.getByLabel('Service 1', { exact: true }).selectOption('web-v2');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web\/host$/);

  await page.goto('/rules/r-shop/web');
  await hydrated(page);
  const rules = page.locator('table').filter({ has: page.getByRole('columnheader', { name: 'Rule' }) });
  const names = rules.locator('tbody tr td:nth-child(2)');
  await expect(names).toHaveText(['canary', 'host']);
  // The request tester answers as the iRule would, as the request is typed.
  await page.getByRole('button', { name: 'Try a request' }).click();
  const tester = page.getByRole('region', { name: 'Request tester' });
  const goesTo = tester.getByTestId('tester-to');
  await expect(goesTo).toHaveText("Goes to the listener's own weights");
  await expect(tester).toContainText('canary: header X-Canary is 1 does not hold');
  await tester.getByLabel('Host').fill('a.example.com');
  await expect(goesTo).toHaveText('Goes to rule host');
  await tester.getByLabel('Headers').fill('X-Canary: 1');
  await expect(goesTo).toHaveText('Goes to rule canary');
  await expect(tester).toContainText('web-v2_8080_pool');
  await expect(page.getByRole('row', { name: /canary/ })).toContainText('header X-Canary is 1');
  await page.getByRole('row', { name: /host/ }).getByRole('button', { name: 'Move up' }).click();
  await expect(names).toHaveText(['host', 'canary']);
  // The same request now meets the host rule first.
  await expect(goesTo).toHaveText('Goes to rule host');
  await expect(page.getByRole('row', { name: /host/ }).getByRole('button', { name: 'Move up' })).toHaveAttribute(
    'title',
    'It is tried first already.',
  );
  // The member cluster's iRule tries the host rule first.
  await expect(async () => {
    await page.reload();
    const irule = (await page.getByTestId('deployed').textContent()) ?? '';
    expect(irule.indexOf('a.example.com')).toBeGreaterThan(-1);
    expect(irule.indexOf('a.example.com')).toBeLessThan(irule.indexOf('X-Canary'));
  }).toPass({ timeout: 20_000 });
});

test('an invalid regexp is refused at the field as it is typed, and the rule cannot be saved', async ({ page }) => {
  await signedIn(page, users.alice, '/rules/r-shop/web/new');
  await page.getByLabel('Name', { exact: true }).fill('broken');
  await condition(page, 1, 'Path', 'matches', '^/api/(v1');
  await page.getByLabel('Service 1', { exact: true }).selectOption('web-v2');
  const said = page.getByRole('group', { name: 'Condition 1' }).getByText(/the pattern does not compile/);
  await expect(said).toBeVisible();
  await expect(page.getByRole('button', { name: 'Save' })).toBeDisabled();
  await page.getByLabel('Condition 1 value 1').fill('^/api/(v1|v2)/');
  await expect(said).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Save' })).toBeEnabled();
});

test('a TCP listener offers only client IP conditions', async ({ page }) => {
  await signedIn(page, users.alice);
  await addListener(page, 'r-shop', 'db', '5432', 'api', 'TCP');
  await page.goto('/rules/r-shop/db/new');
  await hydrated(page);
  const looksAt = page.getByLabel('Condition 1 looks at');
  await expect(looksAt.locator('option')).toHaveText(['Client IP']);
  await expect(page.getByText('only the client\'s IP can be matched')).toBeVisible();
});

test('a shift moves a beta rule from 10% to 50%, step by step, and the member cluster follows', async ({ page }) => {
  await signedIn(page, users.alice, '/rules/r-shop/web/new');
  await page.getByLabel('Name', { exact: true }).fill('beta');
  await condition(page, 1, 'Cookie', 'is', 'beta', 'group');
  await page.getByLabel('Weight 1').fill('90');
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 2', { exact: true }).selectOption('web-v2');
  await page.getByLabel('Weight 2').fill('10');
  // The tester tries the rule as the form would save it.
  await page.getByRole('button', { name: 'Try a request' }).click();
  const tester = page.getByRole('region', { name: 'Request tester' });
  await tester.getByLabel('Cookies').fill('group=beta');
  await expect(tester.getByTestId('tester-to')).toHaveText('Goes to rule beta');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/rules\/r-shop\/web\/beta$/);
  await hydrated(page);

  const shift = page.getByRole('region', { name: 'Traffic shift' });
  await expect(shift.getByTestId('shift-now')).toHaveText('Now 90% to web-v1, 10% to web-v2.');
  await shift.getByLabel('Steps (% to web-v2)').fill('10, 50, 100');
  await shift.getByRole('button', { name: 'Preview next step' }).click();
  await expect(page.getByTestId('diff')).toContainText('lbd_bucket < 50');
  await shift.getByRole('button', { name: 'Shift to 50%' }).click();
  await expect(shift.getByTestId('shift-now')).toHaveText('Now 50% to web-v1, 50% to web-v2.');
  await expect(page.locator('.split-part')).toHaveText(['web-v1 50%', 'web-v2 50%']);
  await expect(shift.getByRole('row', { name: /alice/ })).toContainText('web-v2:8080 50%');
  await expect(shift.getByRole('button', { name: 'Back to 10%' })).toBeEnabled();

  await page.goto('/rules/r-shop/web');
  await hydrated(page);
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('deployed')).toContainText('lbd_bucket < 50', { timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  // What CIS will post carries the same iRule step.
  const irule = postedItem('vs_r-shop_80_irule')?.iRule ?? '';
  expect(irule).toContain('lbd_bucket < 50');
});

test("another project's tenant sees none of it", async ({ page }) => {
  await signedIn(page, users.bob, '/rules/r-shop/web');
  await expect(page.getByRole('alert').filter({ hasText: 'There is no such address request in your projects.' })).toBeVisible();
  await page.goto('/rules');
  await hydrated(page);
  await expect(page.getByText('r-shop')).toHaveCount(0);
});
