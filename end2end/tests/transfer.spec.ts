import { Browser, Cookie } from '@playwright/test';
import { expect, test } from './fixtures';
import { hydrated, requestAddress, signIn, signedIn, users } from './helpers';

// What a browser really downloads for each screen's first load: the wasm bytes on the wire
// (Chromium's encoded lengths, in a fresh context so nothing is cached) and how many wasm
// requests. The bundle is the release one, compressed by the build and sent brotli-encoded.
test.describe.configure({ mode: 'serial' });

/** The most wasm bytes a page's first load may transfer (the heaviest, the rules form, 313,667 B
 * before the two languages; docs/perf.md). */
const TRANSFER_LIMIT = 320_000;
/** The most wasm requests a page's first load may make (the main module, the page's own, and the
 * shared chunks it needs). */
const REQUEST_LIMIT = 30;

type User = (typeof users)[keyof typeof users];

/** The session cookies of `user` (none for an anonymous visit), signed in once. */
async function sessionOf(browser: Browser, user: User | null) {
  if (!user) {
    return [];
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, user);
  await expect(page.getByTestId('current-user')).toHaveText(user.display);
  const cookies = await context.cookies();
  await context.close();
  return cookies;
}

/** Loads `path` with `cookies` in a fresh context (its cache empty); the wasm it transferred:
 * bytes, requests, encodings. */
async function firstLoad(browser: Browser, cookies: Cookie[], path: string) {
  const fresh = await browser.newContext();
  await fresh.addCookies(cookies);
  const measured = await fresh.newPage();
  const wasm: { url: string; encoding: string; cache: string; bytes: Promise<number> }[] = [];
  measured.on('response', (response) => {
    if (response.url().includes('/pkg/') && response.url().endsWith('.wasm')) {
      wasm.push({
        url: response.url(),
        encoding: response.headers()['content-encoding'] ?? '',
        cache: response.headers()['cache-control'] ?? '',
        bytes: response.request().sizes().then((s) => s.responseBodySize),
      });
    }
  });
  await measured.goto(path);
  await hydrated(measured);
  await measured.waitForLoadState('networkidle');
  const bytes = (await Promise.all(wasm.map((w) => w.bytes))).reduce((a, b) => a + b, 0);
  const encodings = [...new Set(wasm.map((w) => w.encoding))];
  const caching = [...new Set(wasm.map((w) => `${new URL(w.url).pathname.split('/')[1]}: ${w.cache}`))];
  await fresh.close();
  return { bytes, requests: wasm.length, encodings, caching };
}

test('every screen first loads its wasm brotli-encoded, within the transfer limit', async ({ browser, page }) => {
  // NB: twelve first loads, each in a fresh context waiting for the network to go quiet; each
  // user signs in once (a sign-in is two page loads of its own).
  test.setTimeout(120_000);
  // A listener to open the rules pages of (the largest screens).
  await signedIn(page, users.alice);
  await requestAddress(page, 't-size', 'acp-region01/team-a', '', 'listener', 'shared-lb');
  await expect(page.getByRole('heading', { name: /Address request t-size/ }).getByTestId('phase')).toHaveText(
    'Enabled',
    { timeout: 20_000 },
  );
  await page.goto('/listeners/t-size/new');
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill('web');
  await page.getByLabel('Port', { exact: true }).fill('80');
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 1', { exact: true }).selectOption('ssh-gw');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/listeners\/t-size\/web$/);

  const pages: [User | null, string][] = [
    [null, '/login'],
    [users.admin, '/loadbalancers'],
    [users.admin, '/loadbalancers/new'],
    [users.admin, '/audit'],
    [users.alice, '/tickets'],
    [users.alice, '/tickets/new'],
    [users.alice, '/listeners'],
    [users.alice, '/listeners/t-size/new'],
    [users.alice, '/rules'],
    [users.alice, '/rules/t-size/web'],
    [users.alice, '/rules/t-size/web/new'],
    [users.alice, '/ingresses'],
  ];
  const sessions = new Map<User | null, Cookie[]>();
  for (const [user] of pages) {
    if (!sessions.has(user)) {
      sessions.set(user, await sessionOf(browser, user));
    }
  }
  // NB: four fresh contexts at a time: most of a first load is waiting for the network to go
  // quiet, and what is counted (bytes, requests) does not depend on what else runs.
  const loads = [];
  for (let at = 0; at < pages.length; at += 4) {
    const batch = pages.slice(at, at + 4);
    loads.push(
      ...(await Promise.all(
        batch.map(async ([user, path]) => ({ path, ...(await firstLoad(browser, sessions.get(user) ?? [], path)) })),
      )),
    );
  }
  const rows = loads.map((l) => `${l.path.padEnd(26)} ${String(l.bytes).padStart(8)} B in ${l.requests} wasm requests`);
  console.log(`first load per screen (wasm on the wire):\n${rows.join('\n')}`);
  for (const load of loads) {
    expect(load.encodings, `${load.path}: every wasm response is brotli-encoded`).toEqual(['br']);
    expect(load.caching, `${load.path}: every wasm file comes versioned, kept for good`).toEqual([
      'bundle: public, max-age=31536000, immutable',
    ]);
    expect(load.bytes, `${load.path}: wasm transferred on first load`).toBeLessThanOrEqual(TRANSFER_LIMIT);
    expect(load.requests, `${load.path}: wasm requests on first load`).toBeLessThanOrEqual(REQUEST_LIMIT);
  }
});
