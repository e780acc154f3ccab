import { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { hydrated, screens as listScreens, signedIn, users } from './helpers';

// Every screen is a lazy route in its own wasm chunk: each must hydrate when reached through the
// navigation, and the back button must work across them (opened by its URL: first-load.spec.ts).

const screens = Object.values(listScreens);

/** Marks the current document, so a later check can tell client-side routing from a reload. */
async function markDocument(page: Page) {
  await page.evaluate(() => ((window as unknown as { lbdeskMark: number }).lbdeskMark = 1));
}

async function sameDocument(page: Page) {
  expect(await page.evaluate(() => (window as unknown as { lbdeskMark?: number }).lbdeskMark)).toBe(1);
}

async function showsScreen(page: Page, screen: (typeof screens)[number]) {
  await expect(page).toHaveURL(new RegExp(`${screen.path}$`));
  await expect(page.getByRole('heading', { level: 1, name: screen.heading, exact: true })).toBeVisible();
}

test('the navigation reaches every screen without a reload, and back returns through them', async ({ page }) => {
  await signedIn(page, users.admin);
  await markDocument(page);
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const screen of screens) {
    await nav.getByRole('link', { name: screen.link }).click();
    await showsScreen(page, screen);
  }
  for (const screen of [...screens].reverse().slice(1)) {
    await page.goBack();
    await showsScreen(page, screen);
  }
  await page.goForward();
  await showsScreen(page, screens[1]);
  await sameDocument(page);
  // The screen reached through history is live: its form opens in the browser.
  await page.getByRole('link', { name: 'Request an address' }).click();
  await expect(page).toHaveURL(/\/tickets\/new$/);
  await expect(page.getByLabel('Name', { exact: true })).toBeEditable();
  await sameDocument(page);
});

// A page with two resources, one drawn inside the other's suspense, once failed to hydrate on one
// load in four: the browser must number its resources as the server did, on every load.
test('a load balancer page with its pair list hydrates on every load', async ({ page }) => {
  await signedIn(page, users.admin);
  for (let i = 0; i < 12; i++) {
    await page.goto('/loadbalancers/shared-lb');
    await hydrated(page);
    await expect(page.getByRole('heading', { name: 'Allocated pairs' })).toBeVisible();
  }
  await page.getByLabel('Search pairs').fill('no-such-address');
  await expect(page.getByText('No pair matches.')).toBeVisible();
});
