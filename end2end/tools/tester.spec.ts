import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { expect, test } from '@playwright/test';
import { hydrated, requestAddress, signedIn, users } from '../tests/helpers';

// The request tester in Chromium, on a listener with 100 rules: from the keystroke that changes
// the request to the answer on screen (evaluation by `domain::routing` and the redraw), per
// evaluation. The rules are applied with kubectl, as an operator would in bulk.
const RULES = 100;
const EVALUATIONS = 200;
const port = Number(process.env.LBDESK_TOOLS_PORT ?? 3918);
const bin = process.env.LBDESK_BIN ?? path.resolve(__dirname, '../../target/release/lbdesk');
const dataDir = path.join(os.tmpdir(), `lbdesk-tools-${port}`);

function kubectl(args: string[], input?: string): string {
  const kubeconfig = path.join(dataDir, 'tools-kubeconfig');
  if (!fs.existsSync(kubeconfig)) {
    const text = execFileSync(bin, ['kubeconfig', '--data-dir', dataDir, '--api-listen', `127.0.0.1:${port + 1}`]);
    fs.writeFileSync(kubeconfig, text, { mode: 0o600 });
  }
  return execFileSync('kubectl', ['--kubeconfig', kubeconfig, ...args], { input, encoding: 'utf8' });
}

const rule = (i: number) => {
  const n = String(i).padStart(3, '0');
  return `apiVersion: ebcpaas.io/v1
kind: Lbrule
metadata: {name: rule-${n}}
spec:
  lbticket: perf-rules
  listener: web
  priority: ${10 * (i + 1)}
  services: [{service: web-v2, port: 8080, weight: 100}]
  rules: [{type: header, key: X-Bucket, values: [{operator: equal, value: v${n}}]}]
`;
};

test('time of one request tester evaluation over 100 rules', async ({ page }) => {
  await signedIn(page, users.alice);
  await requestAddress(page, 'perf-rules', 'acp-region01/team-a');
  const badge = page.getByRole('heading', { name: /Address request perf-rules/ }).getByTestId('phase');
  await expect(badge).toHaveText('Enabled', { timeout: 30_000 });
  await page.goto('/listeners/perf-rules/new');
  await hydrated(page);
  await page.getByLabel('Name', { exact: true }).fill('web');
  await page.getByLabel('Port', { exact: true }).fill('80');
  await page.getByRole('button', { name: '+ Add service' }).click();
  await page.getByLabel('Service 1', { exact: true }).selectOption('web-v1');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/listeners\/perf-rules\/web$/);
  kubectl(['apply', '-f', '-'], Array.from({ length: RULES }, (_, i) => rule(i)).join('---\n'));

  await page.goto('/rules/perf-rules/web');
  await hydrated(page);
  await expect(page.locator('tbody tr')).toHaveCount(RULES);
  await page.getByRole('button', { name: 'Try a request' }).click();
  await expect(page.getByTestId('tester-to')).toBeVisible();
  const [p50, p95, max] = await page.evaluate(async (n) => {
    const tester = document.querySelector('[data-testid="tester"]') as HTMLElement;
    const headers = document.querySelectorAll('section[aria-label="Request tester"] textarea')[0] as HTMLTextAreaElement;
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const value = `v${String(i % 100).padStart(3, '0')}`;
      const want = `Goes to rule rule-${value.slice(1)}`;
      const shown = new Promise<void>((resolve) => {
        const seen = () => tester.textContent?.includes(want);
        const watch = new MutationObserver(() => {
          if (seen()) {
            watch.disconnect();
            resolve();
          }
        });
        watch.observe(tester, { childList: true, characterData: true, subtree: true });
      });
      const started = performance.now();
      headers.value = `X-Bucket: ${value}`;
      headers.dispatchEvent(new Event('input', { bubbles: true }));
      await shown;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return [times[Math.floor(n / 2)], times[Math.floor(n * 0.95)], times[n - 1]];
  }, EVALUATIONS);
  console.log(
    `request tester over ${RULES} rules, ${EVALUATIONS} evaluations (keystroke → answer shown): ` +
      `p50 ${p50.toFixed(3)} ms, p95 ${p95.toFixed(3)} ms, max ${max.toFixed(3)} ms`,
  );
});
