import { expect, test as base } from '@playwright/test';
import * as fs from 'fs';
import { panics, serverLog } from '../server';

/**
 * Playwright's `test`, failing any test during which the server logged a panic: a panic is a
 * failed test even when the page still looked right.
 */
export const test = base.extend<{ noServerPanic: void }>({
  noServerPanic: [
    async ({}, use) => {
      const start = fs.existsSync(serverLog) ? fs.statSync(serverLog).size : 0;
      await use();
      const found = panics(start);
      expect(found, `the server panicked during this test:\n${found.join('\n')}`).toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
