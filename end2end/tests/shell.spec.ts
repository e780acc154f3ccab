import { expect, test } from './fixtures';
import { hydrated, signIn, users } from './helpers';

const screens = ['Load balancers', 'Address requests', 'Listeners', 'Rules', 'F5 Ingress'];

test('an admin signs in and sees the five screens in the navigation', async ({ page }) => {
  await signIn(page, users.admin);
  await expect(page).toHaveURL(/\/tickets$/);
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const screen of screens) {
    await expect(nav.getByRole('link', { name: screen })).toBeVisible();
  }
  await expect(page.getByTestId('current-user')).toHaveText(users.admin.display);
  await expect(page.getByTestId('role')).toHaveText('Platform admin');
  await nav.getByRole('link', { name: 'Load balancers' }).click();
  await expect(page).toHaveURL(/\/loadbalancers$/);
  await expect(page.getByRole('heading', { name: 'Load balancers' })).toBeVisible();
});

test('a wrong password shows the error at the form and does not sign in', async ({ page }) => {
  await signIn(page, { name: users.alice.name, password: 'not-her-password' });
  await expect(page.getByRole('alert')).toHaveText('Wrong user name or password.');
  await expect(page).toHaveURL(/\/login/);
  // An unknown user gets the very same message: nothing tells which names exist.
  await page.getByLabel('User name').fill('nobody-here');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toHaveText('Wrong user name or password.');
  await page.goto('/tickets');
  await expect(page).toHaveURL(/\/login\?next=\/tickets$/);
});

test('a tenant signs in, sees their project, and not the admin screen', async ({ page }) => {
  await signIn(page, users.alice);
  await expect(page.getByTestId('current-user')).toHaveText(users.alice.display);
  await expect(page.getByLabel('Project', { exact: true })).toHaveValue('project-a');
  await expect(page.getByTestId('project')).toHaveText('Project: project-a');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link', { name: 'Address requests' })).toBeVisible();
  await expect(nav.getByRole('link', { name: 'Load balancers' })).toHaveCount(0);
  await page.goto('/loadbalancers');
  await expect(page.getByRole('heading', { name: 'Not allowed' })).toBeVisible();
});

test('signing out returns to sign-in and the back button shows no protected page', async ({ page }) => {
  await signIn(page, users.bob);
  await expect(page.getByTestId('current-user')).toHaveText(users.bob.display);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Listeners' }).click();
  await expect(page.getByRole('heading', { name: 'Listeners' })).toBeVisible();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login/);
  await hydrated(page);
  await page.goBack();
  await expect(page).toHaveURL(/\/login/);
  await expect(page.getByTestId('current-user')).toHaveCount(0);
  await expect(page.getByRole('heading', { name: 'Listeners' })).toHaveCount(0);
});

test('an anonymous visit is sent to sign-in and returns to the page asked for', async ({ page }) => {
  await page.goto('/rules');
  await expect(page).toHaveURL(/\/login\?next=\/rules$/);
  await hydrated(page);
  await page.getByLabel('User name').fill(users.alice.name);
  await page.getByLabel('Password').fill(users.alice.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/rules$/);
  await expect(page.getByRole('heading', { name: 'Rules' })).toBeVisible();
});
