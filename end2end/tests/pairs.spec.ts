import { expect, test } from './fixtures';
import { kubectl } from '../server';
import { signedIn, users } from './helpers';

// A load balancer's pairs come from its address objects, 50 at a time in address order, and
// can be searched. The load balancer and its 53 requests are applied with kubectl, as an
// operator would in bulk, in a project and address ranges of their own.
const count = 53;
const loadbalancer = `apiVersion: ebcpaas.io/v1
kind: Loadbalancer
metadata: {name: pairs-lb}
spec:
  ltm: {url: "http://100.1.77.1/api", tokenSecretRef: {namespace: lbdesk-system, name: pairs-lb-ltm}, cidr: 10.77.0.0/24}
  ve: {addr: 200.1.77.1, credentialsSecretRef: {namespace: lbdesk-system, name: pairs-lb-ve}, cidr: 20.77.0.0/24}
  cluster: acp-region01
  partition: pairs
  nsselector: {cis: pairs}
`;
const tickets = Array.from({ length: count }, (_, i) => {
  const name = `pp-${String(i).padStart(3, '0')}`;
  return `apiVersion: ebcpaas.io/v1
kind: Lbticket
metadata:
  name: ${name}
  labels: {ebcpaas.io/project: project-c, ebcpaas.io/cluster: acp-region01, ebcpaas.io/namespace: team-c}
spec: {claimer: admin, loadbalancer: pairs-lb, namespace: team-c, lbtype: listener}
`;
}).join('---\n');

test('a load balancer lists its pairs 50 at a time in address order, searchable', async ({ page }) => {
  test.setTimeout(120_000);
  kubectl(['apply', '-f', '-'], loadbalancer);
  kubectl(['apply', '-f', '-'], tickets);
  // Every address has its object, and kubectl shows who holds it.
  await expect
    .poll(() => kubectl(['get', 'lbaddresses', '-l', 'ebcpaas.io/loadbalancer=pairs-lb', '--no-headers']).trim().split('\n').length, { timeout: 60_000 })
    .toBe(2 * count);
  // NB: an address object is named by the device it is held on: VE 200.1.77.1's key is the
  // FNV-1a hash lbdesk fixes (`ipam::Device::key`), and the address.
  const listed = kubectl(['get', 'lba', 've-3bc96369af06e14b.20.77.0.1']);
  expect(listed).toMatch(/ADDRESS\s+SIDE\s+PAIR\s+TICKET\s+STATE\s+LOADBALANCER\s+DEVICE/);
  expect(listed).toMatch(/20\.77\.0\.1\s+ve\s+10\.77\.0\.\d+\s+pp-\d{3}\s+(pending|bond)\s+pairs-lb\s+200\.1\.77\.1/);

  await signedIn(page, users.admin, '/loadbalancers/pairs-lb');
  const pairs = page.locator('table').filter({ has: page.getByRole('columnheader', { name: 'VE IP' }) }).locator('tbody tr');
  await expect(pairs).toHaveCount(50);
  const first = await pairs.evaluateAll((rows) => rows.map((r) => r.querySelector('td')?.textContent));
  expect(first).toEqual(Array.from({ length: 50 }, (_, i) => `20.77.0.${i + 1}`));
  await page.getByRole('button', { name: 'Load more' }).click();
  await expect(pairs).toHaveCount(count);
  await expect(page.getByRole('button', { name: 'Load more' })).toHaveCount(0);
  await expect(pairs.last().locator('td').first()).toHaveText(`20.77.0.${count}`);

  const search = page.getByRole('searchbox', { name: 'Search pairs' });
  await search.fill('pp-007');
  await expect(pairs).toHaveCount(1);
  await expect(pairs.first().getByRole('link', { name: 'pp-007' })).toBeVisible();
  await search.fill('20.77.0.5');
  // 20.77.0.5 and 20.77.0.50 to .53
  await expect(pairs).toHaveCount(5);
  await search.fill('no-such-request');
  await expect(page.getByText('No pair matches.')).toBeVisible();
});
