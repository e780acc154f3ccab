import { defineConfig } from '@playwright/test';
import * as os from 'os';
import * as path from 'path';
import base from './playwright.config';

// Tools, not tests: the latency measurement of docs/perf.md and the screenshots of the README,
// on the release server with its driver simulator answering at once. Run from end2end/:
//   npx playwright test --config tools.config.ts enabled       (docs/perf.md)
//   npx playwright test --config tools.config.ts screenshots   (docs/screenshots/)
//   npx playwright test --config tools.config.ts tester        (docs/perf.md)
const port = Number(process.env.LBDESK_TOOLS_PORT ?? 3918);
const bin = process.env.LBDESK_BIN ?? path.resolve(__dirname, '../target/release/lbdesk');
const dataDir = path.join(os.tmpdir(), `lbdesk-tools-${port}`);

export default defineConfig({
  ...base,
  testDir: './tools',
  timeout: 120_000,
  use: { ...base.use, baseURL: `http://127.0.0.1:${port}` },
  webServer: {
    ...(base.webServer as object),
    command: `rm -rf '${dataDir}' && '${bin}' serve --demo --listen 127.0.0.1:${port} --api-listen 127.0.0.1:${port + 1} --metrics-listen 127.0.0.1:0 --driver-sim-config end2end/driver-sim-instant.yaml --data-dir '${dataDir}'`,
    url: `http://127.0.0.1:${port}/healthz`,
  },
});
