import { expect, test } from './fixtures';
import { hydrated, signIn } from './helpers';
import { removeFromGroup } from '../server';

// Signing in with the bank's directory (issue #31): a directory user signs in with their
// directory account and works in the projects their groups give them; taken out of a group by
// the directory's administrators, they lose that project within the refresh period (2 s here),
// in the browser they are signed in with.

const erik = { name: 'erik', password: 'erik-directory', display: 'Erik Twoteams' };

test('the sign-in page says directory accounts sign in, and break-glass accounts too', async ({ page }) => {
  await page.goto('/login');
  await hydrated(page);
  await expect(page.getByTestId('sign-in-how')).toHaveText(
    'Sign in with your directory account. Local break-glass accounts may sign in here too.',
  );
  await expect(page.getByTestId('directory-down')).toHaveCount(0);
});

test('a directory user sees the projects of their groups, and loses one taken from them', async ({ page }) => {
  await signIn(page, erik);
  await expect(page.getByTestId('current-user')).toHaveText(erik.display);
  await expect(page.getByTestId('role')).toHaveText('Tenant user');
  const project = page.getByLabel('Project', { exact: true });
  await expect(project.locator('option')).toHaveText(['project-a', 'project-b']);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link', { name: 'Load balancers' })).toHaveCount(0);

  // The directory's administrators take erik out of team-b-ops (project-b).
  removeFromGroup('team-b-ops', 'uid=erik');
  await expect(async () => {
    await page.reload();
    await expect(project.locator('option')).toHaveText(['project-a'], { timeout: 1_000 });
  }).toPass({ timeout: 10_000 });

  // Out of team-a-dev too, the open session ends: the next click leads to sign-in.
  removeFromGroup('team-a-dev', 'uid=erik');
  await expect(async () => {
    await page.goto('/listeners');
    await expect(page).toHaveURL(/\/login/, { timeout: 1_000 });
  }).toPass({ timeout: 10_000 });
});
