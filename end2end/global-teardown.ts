import { panics, serverLog } from './server';

/** Fails the run when the server panicked at any time, inside a test or between tests. */
export default async function globalTeardown() {
  const found = panics();
  if (found.length > 0) {
    throw new Error(`the server panicked (log: ${serverLog}):\n${found.join('\n')}`);
  }
}
