import { defineConfig } from '@playwright/test';
import * as path from 'path';
import { apiPort, bigipSimPort, bin, dataDir, ldapDir, ldapPort, ldapsPort, port, serverLog } from './server';

// The real lbdesk binary in embedded mode with the fixed demo logins, on a fresh data directory,
// signing directory users in with a throw-away OpenLDAP (their groups read again every 2 s). Its
// log goes to a file that every test reads for panics (tests/fixtures.ts).
const directory = [
  `{ kill $(cat '${ldapDir}/slapd.pid' 2>/dev/null) 2>/dev/null; rm -rf '${ldapDir}'; }`,
  `sh server/tests/directory/start.sh '${ldapDir}' ${ldapsPort} ${ldapPort}`,
  `echo 'refreshSeconds: 2' >> '${ldapDir}/active-directory.yaml'`,
].join(' && ');

// NB: Chromium preloads its WebUI omnibox popups (two pages in a renderer of their own) in every
// new window, and each test's context is one: about 1 CPU-s a context for browser UI no test uses
// (docs/perf.md). Chromium honours only the last `--disable-features`, and ours comes after
// Playwright's own, so it repeats that list (Playwright 1.65's `disabledFeatures`); an upgrade of
// Playwright must compare the two, hence the check below.
const PLAYWRIGHT = '1.65.1';
const disabledFeatures = [
  // Playwright's.
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
  // Ours.
  'WebUIOmniboxPopup',
  'WebUIOmniboxAimPopup',
];
const installed: string = require('@playwright/test/package.json').version;
if (installed !== PLAYWRIGHT) {
  throw new Error(
    `Playwright ${installed} is installed; the browser's disabled features repeat ${PLAYWRIGHT}'s: compare them, then update PLAYWRIGHT in playwright.config.ts`,
  );
}

export default defineConfig({
  testDir: './tests',
  timeout: 30_000,
  expect: { timeout: 10_000 },
  // NB: three spec files at a time against the one server, each file's tests in order: with
  // two, a fifth of the two cores stayed idle while tests waited on the server (50-58 s
  // against 61-63 s, docs/perf.md). The tests use names of their own and do not depend on what
  // another file has done (a label that also matched the quota panel did, and was fixed).
  fullyParallel: false,
  workers: 3,
  forbidOnly: true,
  globalTeardown: './global-teardown.ts',
  retries: 0,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    // NB: the browser's languages decide a first visit's (tests/i18n.spec.ts runs in zh-CN).
    locale: 'en-US',
    // NB: no trace: recorded for every test (to keep a failure's), it cost the suite's processes
    // 304-356 CPU-s against 267-283 without, in alternate runs (docs/perf.md). A failure prints its
    // error and the server's warnings (tests/fixtures.ts); to trace one, `npx playwright test
    // --trace retain-on-failure`.
    trace: 'off',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        `--disable-features=${disabledFeatures.join(',')}`,
      ],
    },
  },
  webServer: {
    command: `rm -rf '${dataDir}' && ${directory} && '${bin}' serve --demo --directory '${ldapDir}/active-directory.yaml' --listen 127.0.0.1:${port} --api-listen 127.0.0.1:${apiPort} --metrics-listen 127.0.0.1:0 --driver-sim-config end2end/driver-sim.yaml --bigip-sim-listen 127.0.0.1:${bigipSimPort} --bigip-poll-seconds 2 --data-dir '${dataDir}' > '${serverLog}' 2>&1 || { cat '${serverLog}'; exit 1; }`,
    cwd: path.resolve(__dirname, '..'),
    url: `http://127.0.0.1:${port}/healthz`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
