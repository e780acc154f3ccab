import { defineConfig } from '@playwright/test';
import * as os from 'os';
import * as path from 'path';
import base from './playwright.config';

// The latency measurement of docs/perf.md: the same server, its driver simulator answering at
// once. Not part of the test suite; run it with
//   LBDESK_BIN=$PWD/../target/release/lbdesk npx playwright test --config perf.config.ts
const port = Number(process.env.LBDESK_PERF_PORT ?? 3918);
const bin = process.env.LBDESK_BIN ?? path.resolve(__dirname, '../target/release/lbdesk');
const dataDir = path.join(os.tmpdir(), `lbdesk-perf-${port}`);

export default defineConfig({
  ...base,
  testDir: './perf',
  timeout: 120_000,
  use: { ...base.use, baseURL: `http://127.0.0.1:${port}` },
  webServer: {
    ...(base.webServer as object),
    command: `rm -rf '${dataDir}' && '${bin}' serve --demo --listen 127.0.0.1:${port} --api-listen 127.0.0.1:0 --driver-sim-config end2end/driver-sim-instant.yaml --data-dir '${dataDir}'`,
    url: `http://127.0.0.1:${port}/healthz`,
  },
});
