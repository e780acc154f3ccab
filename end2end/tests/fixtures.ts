import { expect, test as base } from '@playwright/test';
import * as fs from 'fs';
import { panics, serverLog, warnings } from '../server';

/**
 * Playwright's `test`, failing any test during which the server logged a panic: a panic is a
 * failed test even when the page still looked right. A failed test prints the warnings and
 * errors the server logged while it ran (the other worker's included): a CI run keeps only
 * what is printed.
 */
export const test = base.extend<{ noServerPanic: void }>({
  noServerPanic: [
    async ({}, use, testInfo) => {
      const start = fs.existsSync(serverLog) ? fs.statSync(serverLog).size : 0;
      await use();
      if (testInfo.status !== testInfo.expectedStatus) {
        const logged = warnings(start);
        console.log(`the server's warnings and errors during this test (${logged.length}):\n${logged.join('\n')}`);
      }
      const found = panics(start);
      expect(found, `the server panicked during this test:\n${found.join('\n')}`).toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
