import { expect, test } from './fixtures';
import { bigipSimPort } from '../server';
import { addListener, hydrated, requestAddress, signedIn, users } from './helpers';

// What BIG-IP runs, read back: in embedded mode a simulated CIS posts what the member cluster
// holds to the BIG-IP simulator, and lbdesk reads it back every 2 s. The test changes the
// simulator's behaviour as a BIG-IP's state would change (a pod's monitor going down, a
// configuration error), never lbdesk's. It uses Services of team-a no other spec uses (dns,
// api-canary).
test.describe.configure({ mode: 'serial' });

/** Sets the BIG-IP simulator's behaviour (`{}`: every member up, every valid declaration taken). */
async function bigip(behaviour: Record<string, unknown>) {
  const answer = await fetch(`http://127.0.0.1:${bigipSimPort}/_behaviour`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(behaviour),
  });
  expect(answer.status).toBe(204);
}

test('a listener turns live on BIG-IP with its members; a member down and a refusal show on its page', async ({
  page,
}) => {
  test.setTimeout(90_000);
  try {
    await signedIn(page, users.alice);
    await requestAddress(page, 'b-live', 'acp-region01/team-a', '', 'listener', 'shared-lb');
    const phase = page.getByRole('heading', { name: /Address request b-live/ }).getByTestId('phase');
    await expect(phase).toHaveText('Enabled', { timeout: 20_000 });
    await addListener(page, 'b-live', 'web', '80', 'dns');

    // Live, with the Service's two pods up; the request list rolls it up.
    const state = page.getByTestId('on-bigip');
    await expect(state).toHaveText('Live on BIG-IP', { timeout: 30_000 });
    await expect(page.getByTestId('members-up')).toHaveText('2 of 2 members up');
    const members = page.locator('table').filter({ has: page.getByRole('columnheader', { name: 'Address' }) });
    const first = (await members.locator('tbody tr td:nth-child(2)').first().textContent()) ?? '';
    expect(first).toMatch(/^10\./);

    // BIG-IP's monitor marks a member down: the page says so within the polling period.
    await bigip({ membersDown: [first] });
    await expect(page.getByTestId('members-up')).toHaveText('1 of 2 members up', { timeout: 15_000 });
    await expect(page.locator('tr', { hasText: first }).getByText('Down')).toBeVisible();
    // Read again on request, not at the next period: the page comes back read anew.
    await bigip({ membersDisabled: [first] });
    await page.getByRole('button', { name: 'Read BIG-IP now' }).click();
    await expect(page.getByTestId('bigip-read')).toContainText('Last read on request at', { timeout: 25_000 });
    await expect(page.locator('tr', { hasText: first }).getByText('Disabled')).toBeVisible();
    // The listener's rules page says the same, and the request tester where a request goes.
    await page.goto('/rules/b-live/web');
    await hydrated(page);
    await expect(state).toHaveText('Live on BIG-IP');
    await page.getByRole('button', { name: 'Try a request' }).click();
    await expect(page.getByTestId('tester-members')).toHaveText('On BIG-IP, pool dns_8053_pool: 1 of 2 members up');

    // BIG-IP refuses the tenant's next declaration: rejected, with BIG-IP's reason.
    await bigip({ rejectTenants: ['shared'] });
    await page.goto('/listeners/b-live/web/edit');
    await hydrated(page);
    await page.getByRole('button', { name: '+ Add service' }).click();
    await page.getByLabel('Service 2', { exact: true }).selectOption('api-canary');
    await page.getByLabel('Weight 1').fill('80');
    await page.getByLabel('Weight 2').fill('20');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect(page).toHaveURL(/\/listeners\/b-live\/web$/);
    await expect(state).toHaveText('Rejected by BIG-IP', { timeout: 30_000 });
    await expect(page.getByTestId('bigip-differs')).toContainText('rejected by the simulator');

    await page.goto('/tickets');
    await expect(page.getByRole('row', { name: /b-live/ }).getByTestId('bigip-rollup')).toHaveText(
      'BIG-IP: 1 rejected',
    );
  } finally {
    await bigip({});
  }
});
