import { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { hydrated, signedIn, users } from './helpers';

// A script-injection payload in every text field of the two forms: the refusals quote it as
// literal text, no dialog opens, and the page gains no element from it. Nothing is saved (the
// last refusal is left standing), so the other specs see the demo data unchanged.

const payload = '"><img src=x onerror=alert(1)><script>alert(2)</script>{{7*7}}';
/** What a refusal quoting the payload shows of it (the quote escaped, the rest as typed). */
const quoted = '<img src=x onerror=alert(1)><script>alert(2)</script>{{7*7}}';

/** Fails the test on any dialog (`alert`, `confirm`, `prompt`) the page opens. */
function noDialogs(page: Page): string[] {
  const opened: string[] = [];
  page.on('dialog', async (dialog) => {
    opened.push(`${dialog.type()}: ${dialog.message()}`);
    await dialog.dismiss();
  });
  return opened;
}

/** The payload made nothing of itself: no image, no script of its own, no template evaluated. */
async function inert(page: Page, opened: string[]) {
  await expect(page.locator('img[src="x"]')).toHaveCount(0);
  const injected = await page.evaluate(
    () => Array.from(document.scripts).filter((s) => /^alert\(\d\)$/.test((s.textContent ?? '').trim())).length,
  );
  expect(injected, 'no script element from the payload').toBe(0);
  expect(opened, 'no dialog opened').toEqual([]);
}

/** The refusal beside the field `id` (its `<id>-error` alert); it quotes the payload as text. */
async function refusedQuoting(page: Page, id: string) {
  const error = page.locator(`#${id}-error`);
  await expect(error).toContainText(quoted);
  // Text, not markup: the alert holds no element at all.
  await expect(error.locator('*')).toHaveCount(0);
}

test('the new load balancer form shows a script payload in every field as text', async ({ page }) => {
  const opened = noDialogs(page);
  await signedIn(page, users.admin, '/loadbalancers/new');
  const fields = [
    'Name',
    'LTM URL',
    'LTM token',
    'LTM CIDR',
    'VE address',
    'VE user',
    'VE password',
    'VE CIDR',
    'Partition (AS3 tenant)',
    'CIS namespace',
    'Reserved addresses',
  ];
  for (const field of fields) {
    await page.getByLabel(field, { exact: true }).fill(payload);
  }
  // Typed as text, shown as text: nothing of it became markup yet.
  await inert(page, opened);
  await page.getByRole('button', { name: '+ Add' }).click();
  await page.getByLabel('Key 1').fill(payload);
  await page.getByLabel('Value 1').fill(payload);
  const save = page.getByRole('button', { name: 'Save' });

  // Each save is refused at the first field the rules check; that field then gets a valid value,
  // so the next save is refused at the next one. The reserved addresses stay refused: nothing
  // is saved.
  const fixes: Record<string, [string, string][]> = {
    name: [['Name', 'xss-lb']],
    'ltm-url': [['LTM URL', 'http://100.9.9.9/api']],
    've-addr': [['VE address', '200.9.9.9']],
    'ltm-cidr': [['LTM CIDR', '10.99.0.0/24']],
    've-cidr': [['VE CIDR', '20.99.0.0/24']],
    'cis-namespace': [['CIS namespace', 'kube-system']],
    nsselector: [
      ['Key 1', 'zone'],
      ['Value 1', 'f5'],
    ],
    partition: [['Partition (AS3 tenant)', 'xss']],
  };
  const ids = [...Object.keys(fixes), 'reserved'];
  const refused = async () => {
    for (const id of ids) {
      if (((await page.locator(`#${id}-error`).textContent()) ?? '').trim() !== '') {
        return id;
      }
    }
    return null;
  };
  const seen: string[] = [];
  let last: string | null = null;
  for (let i = 0; i <= ids.length; i++) {
    await save.click();
    if (last !== null) {
      await expect(page.locator(`#${last}-error`), `${last} is no longer refused`).toBeEmpty();
    }
    await expect.poll(refused, { message: 'the save is refused at a field' }).not.toBeNull();
    const id = (await refused()) as string;
    seen.push(id);
    const error = page.locator(`#${id}-error`);
    // Not every rule quotes the value; those that do quote it as text. The reserved addresses
    // are split at spaces, so their refusal quotes the first piece only.
    if (id === 'reserved') {
      await expect(error).toContainText('\\"><img');
    } else if (((await error.textContent()) ?? '').includes('<img')) {
      await refusedQuoting(page, id);
    }
    await expect(error.locator('*')).toHaveCount(0);
    await inert(page, opened);
    if (id === 'reserved') {
      break;
    }
    for (const [label, valid] of fixes[id]) {
      await page.getByLabel(label, { exact: true }).fill(valid);
    }
    last = id;
  }
  expect(seen, 'each field was refused in turn, the reserved addresses last').toEqual(
    expect.arrayContaining(['name', 'ltm-url', 've-addr', 'cis-namespace', 'nsselector', 'partition', 'reserved']),
  );
  expect(seen[seen.length - 1]).toBe('reserved');
  await expect(page).toHaveURL(/\/loadbalancers\/new$/);
  await page.goto('/loadbalancers');
  await hydrated(page);
  await expect(page.getByRole('link', { name: 'xss-lb' })).toHaveCount(0);
  await inert(page, opened);
});

test('the address request form shows a script payload in every field as text', async ({ page }) => {
  const opened = noDialogs(page);
  await signedIn(page, users.alice, '/tickets/new');
  await page.getByLabel('Namespace').selectOption('acp-region01/team-a');
  for (const field of ['Name', 'VE IP', 'LTM IP']) {
    await page.getByLabel(field, { exact: true }).fill(payload);
  }
  // The addresses are checked as typed: each refusal quotes what was typed, as text.
  for (const id of ['veip', 'ltmip']) {
    await expect(page.locator(`#${id}-error`)).not.toBeEmpty();
    const text = (await page.locator(`#${id}-error`).textContent()) ?? '';
    if (text.includes('<img')) {
      await refusedQuoting(page, id);
    }
  }
  await inert(page, opened);
  await page.getByRole('button', { name: 'Request' }).click();
  await refusedQuoting(page, 'name');
  await inert(page, opened);
  // With a valid name the save is refused at the address, which stays unsaved.
  await page.getByLabel('Name', { exact: true }).fill('xss-a');
  await page.getByRole('button', { name: 'Request' }).click();
  await expect(page.locator('#veip-error')).not.toBeEmpty();
  await expect(page).toHaveURL(/\/tickets\/new$/);
  await inert(page, opened);
  await page.goto('/tickets');
  await hydrated(page);
  await expect(page.getByRole('link', { name: 'xss-a' })).toHaveCount(0);
  await inert(page, opened);
});
