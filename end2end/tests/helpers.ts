import { expect, Page } from '@playwright/test';

/** The demo logins of `lbdesk serve --demo`. */
export const users = {
  admin: { name: 'admin', password: 'admin-demo', display: 'Platform Admin' },
  alice: { name: 'alice', password: 'alice-demo', display: 'Alice Tenant' },
  bob: { name: 'bob', password: 'bob-demo', display: 'Bob Tenant' },
};

/** Waits until the page is interactive (hydrated), so clicks reach the app. */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
}

/** Signs in through the sign-in page as a person would. */
export async function signIn(page: Page, user: { name: string; password: string }, path = '/login') {
  await page.goto(path);
  await hydrated(page);
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Signs in and waits until the signed-in frame shows who is signed in. */
export async function signedIn(page: Page, user: { name: string; password: string; display: string }) {
  await signIn(page, user);
  await expect(page.getByTestId('current-user')).toHaveText(user.display);
}
