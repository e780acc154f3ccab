import * as fs from 'fs';
import * as path from 'path';
import { type Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { fillLoadbalancer, hydrated, users } from './helpers';

// The console in Chinese and English: a tenant's main story in zh-CN (request an address, add a
// listener and a rule, try a request), every page reached checked for English words, the
// language switched mid-session without a reload; an admin's story switched to English.
//
// NB: only a switch TO English is ever saved for the demo users (other files run beside this one
// as the same users, in English): the Chinese stories come from the browser's languages.
test.describe.configure({ mode: 'serial' });

/** The dictionaries, as the server compiles them in. */
function dictionary(locale: string): Record<string, string> {
  const dir = path.resolve(__dirname, '../../app/locales', locale);
  return Object.assign({}, ...fs.readdirSync(dir).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))));
}
const zhWords = dictionary('zh-CN');
const enWords = dictionary('en');

/** The words of `key`, its parameters filled in (the plural forms are English-only). */
function words(dict: Record<string, string>, key: string, params: Record<string, string | number> = {}) {
  const text = dict[key];
  if (text === undefined) throw new Error(`no key ${key}`);
  return text.replace(/\{(\w+)(?::([^|}]*)\|([^}]*))?\}/g, (_, name, one, many) =>
    one === undefined ? String(params[name]) : String(params[name]) === '1' ? one : many,
  );
}
const zh = (key: string, params?: Record<string, string | number>) => words(zhWords, key, params);
const en = (key: string, params?: Record<string, string | number>) => words(enWords, key, params);

/** ASCII words a Chinese page may show: names of products and protocols (as in the app's
 * `i18n::tests::ALLOWED_ASCII`), and the demo's own data that is a plain word. Words holding a
 * digit, `-`, `_`, `.` or `/` are data (names, addresses, pools) and are not checked. */
const ALLOWED = new Set([
  ...'AS3 F5 BIG-IP LTM VE CIS IP TCP UDP HTTP HTTPS iRule ConfigMap ConfigMaps Ingress Ingresses Service Secret'.split(' '),
  ...'Secrets Lbticket Lbrule Loadbalancer kubectl YAML JSON CIDR URL URI DNS Cookie ID lbdesk Kubernetes API AD'.split(' '),
  ...'LDAP TLS CA PEM VIP UTC s ms KB MB KiB MiB OK lb'.split(' '),
  // The demo's data: users' names and display names, the namespace "default", the load balancer's
  // "shared" tenant, the Services "api" and "dns", the language switch's own "English".
  ...'alice bob admin Alice Bob Tenant Platform Admin default shared English api dns'.split(' '),
]);

/** The English words of the page shown now, outside what is English by convention (AS3 and iRule
 * text in `pre`/`code`, Kubernetes object fields marked `lang="en"`) and what users named (names,
 * Services, namespaces, users: marked `translate="no"`, as a browser's translator should leave
 * them; other specs' listeners such as "web" show in the same lists). */
async function englishOn(page: Page): Promise<string[]> {
  const texts = await page.evaluate(() => {
    const skip = (el: Element | null) =>
      !!el?.closest('pre, code, script, style, [lang="en"], [translate="no"], .locale-switch');
    const out: string[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!skip(n.parentElement)) out.push(n.textContent ?? '');
    }
    for (const el of Array.from(document.querySelectorAll('[placeholder], [title], [aria-label]'))) {
      if (skip(el)) continue;
      // NB: a tooltip quoting a Kubernetes object's field is marked `data-object-title`.
      const attributes = el.hasAttribute('data-object-title') ? ['placeholder', 'aria-label'] : ['placeholder', 'title', 'aria-label'];
      for (const a of attributes) out.push(el.getAttribute(a) ?? '');
    }
    out.push(document.title);
    return out;
  });
  const found = new Set<string>();
  for (const text of texts) {
    for (const word of text.match(/[A-Za-z][A-Za-z0-9_.\/:-]*/g) ?? []) {
      const bare = word.replace(/[.:]+$/, '');
      if (/^[A-Za-z]+$/.test(bare) && !ALLOWED.has(bare) && !/^BIG-IP$/.test(bare)) found.add(bare);
    }
  }
  return [...found];
}

/** Opens `path` (hydrated, its data loaded) and fails if it shows an English word. */
async function chineseOnly(page: Page, path: string, settled?: () => Promise<void>) {
  await page.goto(path);
  await hydrated(page);
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  if (settled) await settled();
  await expect(page.getByText(zh('common.loading'), { exact: true })).toHaveCount(0);
  // NB: soft, so that one run names every page with an English word.
  expect.soft(await englishOn(page), `English on ${path}`).toEqual([]);
}

test.describe('in zh-CN', () => {
  test.use({ locale: 'zh-CN' });

  test('a tenant requests an address, adds a listener and a rule, tries a request, all in Chinese', async ({ page }) => {
    test.setTimeout(120_000);
    await page.goto('/login');
    await hydrated(page);
    await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
    expect(await englishOn(page), 'the sign-in page').toEqual([]);
    await page.getByLabel(zh('common.login.username')).fill(users.alice.name);
    await page.getByLabel(zh('common.login.password')).fill(users.alice.password);
    await page.getByRole('button', { name: zh('common.login.submit') }).click();
    await expect(page.getByTestId('current-user')).toHaveText(users.alice.display);
    await expect(page.getByRole('navigation').getByRole('link', { name: zh('common.nav.listeners') })).toBeVisible();

    // Request an address.
    await page.goto('/tickets/new');
    await hydrated(page);
    await page.getByLabel(zh('tickets.form.name'), { exact: true }).fill('zh-shop');
    // NB: Services of the default namespace no other spec uses (dns, ssh-gw).
    await page.getByLabel(zh('tickets.form.namespace')).selectOption('acp-region01/default');
    await page.getByLabel(zh('tickets.form.loadbalancer')).selectOption('shared-lb');
    await page.getByLabel(zh('tickets.form.type')).selectOption('listener');
    await page.getByRole('button', { name: zh('tickets.form.request') }).click();
    await expect(page).toHaveURL(/\/tickets\/zh-shop$/);
    const heading = page.getByRole('heading', { name: zh('common.address.request_named', { ticket: 'zh-shop' }) });
    await expect(heading.getByTestId('phase')).toHaveText(zh('common.phase.enabled'), { timeout: 20_000 });

    // Add a listener; a second one on the same port is refused by the server, in Chinese.
    await page.goto('/listeners/zh-shop/new');
    await hydrated(page);
    await page.getByLabel(zh('listeners.field.name'), { exact: true }).fill('web1');
    await page.getByLabel(zh('listeners.field.port'), { exact: true }).fill('80');
    await page.getByLabel(zh('listeners.field.protocol')).selectOption('http');
    await page.getByRole('button', { name: zh('common.services.add') }).click();
    await page.getByLabel(zh('common.services.service', { n: 1 }), { exact: true }).selectOption('dns');
    await page.getByRole('button', { name: zh('common.save') }).click();
    await expect(page).toHaveURL(/\/listeners\/zh-shop\/web1$/);
    await expect(page.getByTestId('on-bigip')).toHaveText(zh('bigip.live'), { timeout: 30_000 });

    await page.goto('/listeners/zh-shop/new');
    await hydrated(page);
    await page.getByLabel(zh('listeners.field.name'), { exact: true }).fill('web2');
    await page.getByLabel(zh('listeners.field.port'), { exact: true }).fill('80');
    await page.getByRole('button', { name: zh('common.services.add') }).click();
    await page.getByLabel(zh('common.services.service', { n: 1 }), { exact: true }).selectOption('ssh-gw');
    await page.getByRole('button', { name: zh('common.save') }).click();
    const portError = page.locator('#port-error');
    await expect(portError).toContainText('80');
    await expect(portError).toHaveText(/[\u4e00-\u9fff]/);
    expect(await englishOn(page), 'the refused form').toEqual([]);

    // Add a rule: its checks, typed in the browser, speak Chinese too.
    await page.goto('/listeners/zh-shop/web1');
    await hydrated(page);
    await page.getByRole('link', { name: zh('listeners.detail.no_rules') }).click();
    await expect(page).toHaveURL(/\/rules\/zh-shop\/web1$/);
    await hydrated(page);
    await page.getByRole('button', { name: zh('rules.listener.add') }).click();
    await expect(page).toHaveURL(/\/rules\/zh-shop\/web1\/new$/);
    await hydrated(page);
    await page.getByLabel(zh('rules.col.name'), { exact: true }).fill('canary-1');
    await page.getByLabel(zh('rules.condition.looks_at', { n: 1 })).selectOption({ label: zh('rules.type.header') });
    await page.getByLabel(zh('rules.condition.name', { n: 1 })).fill('X-Canary');
    await page.getByLabel(zh('rules.condition.operator', { n: 1, m: 1 })).selectOption({ label: zh('rules.op.regexp') });
    await page.getByLabel(zh('rules.condition.value', { n: 1, m: 1 })).fill('^(v1');
    await expect(page.getByRole('alert').filter({ hasText: /[\u4e00-\u9fff]/ }).first()).toBeVisible();
    expect(await englishOn(page), 'a refused pattern').toEqual([]);
    await page.getByLabel(zh('rules.condition.operator', { n: 1, m: 1 })).selectOption({ label: zh('rules.op.equal') });
    await page.getByLabel(zh('rules.condition.value', { n: 1, m: 1 })).fill('1');
    await page.getByLabel(zh('common.services.service', { n: 1 }), { exact: true }).selectOption('ssh-gw');
    await page.getByRole('button', { name: zh('common.preview_as3') }).click();
    await expect(page.getByTestId('preview')).toBeVisible();
    expect(await englishOn(page), 'the AS3 preview (its labels; not the AS3 itself)').toEqual([]);
    await page.getByRole('button', { name: zh('common.save') }).click();
    await expect(page).toHaveURL(/\/rules\/zh-shop\/web1\/canary-1$/);

    // Try a request.
    await page.goto('/rules/zh-shop/web1');
    await hydrated(page);
    await page.getByRole('button', { name: zh('rules.tester.try') }).click();
    const tester = page.getByRole('region', { name: zh('rules.tester.label') });
    const goesTo = tester.getByTestId('tester-to');
    await expect(goesTo).toHaveText(zh('rules.tester.goes_to', { to: zh('rules.tester.own_weights') }));
    await tester.getByLabel(zh('rules.tester.headers')).fill('X-Canary: 1');
    await expect(goesTo).toHaveText(zh('rules.tester.goes_to', { to: zh('rules.tester.rule', { name: 'canary-1' }) }));
    expect(await englishOn(page), 'the request tester').toEqual([]);

    // Every page the tenant reaches, in Chinese only.
    const live = async () => {
      await expect(page.getByTestId('on-bigip').first()).toHaveText(zh('bigip.live'), { timeout: 30_000 });
    };
    for (const [route, settled] of [
      ['/tickets', undefined],
      ['/tickets/new', undefined],
      ['/tickets/zh-shop', undefined],
      ['/listeners', undefined],
      ['/listeners/zh-shop/new', undefined],
      ['/listeners/zh-shop/web1', live],
      ['/listeners/zh-shop/web1/edit', undefined],
      ['/rules', undefined],
      ['/rules/zh-shop/web1', live],
      ['/rules/zh-shop/web1/new', undefined],
      ['/rules/zh-shop/web1/canary-1', undefined],
      ['/rules/zh-shop/web1/canary-1/edit', undefined],
      ['/ingresses', undefined],
      ['/audit', undefined],
      ['/loadbalancers', undefined],
      ['/no-such-page', undefined],
    ] as [string, (() => Promise<void>) | undefined][]) {
      await chineseOnly(page, route, settled);
    }

    // Switched to English mid-session: at once, without a reload.
    await page.goto('/rules/zh-shop/web1');
    await hydrated(page);
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
    await page.getByRole('button', { name: 'English' }).click();
    await expect(page.getByRole('heading', { name: en('rules.listener.title', { listener: 'web1' }) })).toBeVisible();
    await expect(page.getByRole('navigation').getByRole('link', { name: en('common.nav.listeners') })).toBeVisible();
    await expect(page.locator('html')).toHaveAttribute('lang', 'en');
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    // Remembered for her: a reload, and a new page, stay English though the browser asks for Chinese.
    await page.reload();
    await hydrated(page);
    await expect(page.locator('html')).toHaveAttribute('lang', 'en');
    await expect(page.getByRole('button', { name: en('rules.tester.try') })).toBeVisible();
  });

  test('an admin signs in in Chinese, sees every admin page in it, then works in English', async ({ page }) => {
    test.setTimeout(90_000);
    await page.goto('/login');
    await hydrated(page);
    await page.getByLabel(zh('common.login.username')).fill(users.admin.name);
    await page.getByLabel(zh('common.login.password')).fill(users.admin.password);
    await page.getByRole('button', { name: zh('common.login.submit') }).click();
    await expect(page.getByTestId('role')).toHaveText(zh('common.role.admin'));
    for (const route of [
      '/loadbalancers',
      '/loadbalancers/new',
      '/loadbalancers/shared-lb',
      '/loadbalancers/shared-lb/edit',
      '/tickets',
      '/listeners',
      '/rules',
      '/ingresses',
      '/audit',
      '/users',
    ]) {
      await chineseOnly(page, route);
    }

    // Switched mid-session, the admin registers a load balancer in English.
    await page.goto('/loadbalancers/new');
    await hydrated(page);
    await page.getByRole('button', { name: 'English' }).click();
    await expect(page.getByTestId('role')).toHaveText(en('common.role.admin'));
    await fillLoadbalancer(page, 'lb-i18n', undefined, 'http://100.1.1.18/api', '200.1.1.18');
    // NB: an AS3 tenant of its own: the default (the cluster's name) is screens.spec's demo-lb's.
    await page.getByLabel(en('loadbalancers.form.partition')).fill('i18n');
    await page.getByRole('button', { name: en('common.save') }).click();
    await expect(page).toHaveURL(/\/loadbalancers\/lb-i18n$/);
    await expect(page.locator('html')).toHaveAttribute('lang', 'en');
  });
});

test('the sign-in page switches language at once and remembers it in the browser', async ({ page }) => {
  await page.goto('/login');
  await hydrated(page);
  await expect(page.getByLabel(en('common.login.username'))).toBeVisible();
  await page.getByRole('button', { name: '中文' }).click();
  await expect(page.getByLabel(zh('common.login.username'))).toBeVisible();
  await expect(page.getByRole('button', { name: zh('common.login.submit') })).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  await page.reload();
  await hydrated(page);
  await expect(page.getByLabel(zh('common.login.username'))).toBeVisible();
  // A wrong password is told in the page's language.
  await page.getByLabel(zh('common.login.username')).fill('bob');
  await page.getByLabel(zh('common.login.password')).fill('not-his');
  await page.getByRole('button', { name: zh('common.login.submit') }).click();
  await expect(page.locator('#login-error')).toHaveText(zh('common.login.wrong'));
});
