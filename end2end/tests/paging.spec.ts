import { expect, test } from './fixtures';
import { kubectl } from '../server';
import { signedIn, users } from './helpers';

// A long list of addresses comes a page of 50 at a time. The addresses are applied with kubectl
// as an operator would in bulk, in a project of their own (no other test sees them), on a load
// balancer not yet registered, so the reconciler leaves them waiting and hands out no address.
const count = 53;
const tickets = Array.from({ length: count }, (_, i) => {
  const name = `pg-${String(i).padStart(3, '0')}`;
  return `apiVersion: ebcpaas.io/v1
kind: Lbticket
metadata:
  name: ${name}
  labels: {ebcpaas.io/project: project-c, ebcpaas.io/cluster: acp-region01, ebcpaas.io/namespace: team-c}
spec: {claimer: admin, loadbalancer: not-yet, namespace: team-c, lbtype: listener}
`;
}).join('---\n');

test('the listeners of many addresses come 50 addresses at a time, the rest on "Load more"', async ({ page }) => {
  kubectl(['apply', '-f', '-'], tickets);
  await signedIn(page, users.admin, '/listeners');
  const groups = page.getByRole('region', { name: /^Address request / });
  await expect(page.getByRole('region', { name: 'Address request pg-000' })).toBeVisible();
  await expect(groups).toHaveCount(50);
  await expect(page.getByRole('region', { name: 'Address request pg-052' })).toHaveCount(0);

  const more = page.getByRole('button', { name: 'Load more' });
  await more.click();
  await expect(page.getByRole('region', { name: 'Address request pg-052' })).toBeVisible();
  expect(await groups.count()).toBeGreaterThanOrEqual(count);
  // The admin sees every project's addresses, and other specs' may sort after pg-*: each
  // further page adds addresses until the list ends and the button goes.
  for (let pages = 0; pages < 10 && (await more.count()) > 0; pages++) {
    const before = await groups.count();
    await more.click();
    await expect(groups).not.toHaveCount(before);
  }
  await expect(more).toHaveCount(0);
  // Each address shows once, in name order.
  const names = await groups.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
  expect(new Set(names).size).toBe(names.length);
  expect([...names].sort()).toEqual(names);
});
