import * as fs from 'fs';
import * as path from 'path';
import { ldapDir, panics, serverLog } from './server';

/** Stops the test directory, then fails the run when the server panicked at any time, inside a
 * test or between tests. */
export default async function globalTeardown() {
  const pidFile = path.join(ldapDir, 'slapd.pid');
  if (fs.existsSync(pidFile)) {
    process.kill(Number(fs.readFileSync(pidFile, 'utf8').trim()));
  }
  const found = panics();
  if (found.length > 0) {
    throw new Error(`the server panicked (log: ${serverLog}):\n${found.join('\n')}`);
  }
}
