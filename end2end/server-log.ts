import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** The port the server under test listens on. */
export const port = Number(process.env.LBDESK_E2E_PORT ?? 3917);

/** Where the server under test writes its log (standard output and error). */
export const serverLog = path.join(os.tmpdir(), `lbdesk-e2e-${port}.log`);

/** The lines of the server's log from byte `from` on that report a panic, with the line after each. */
export function panics(from = 0): string[] {
  if (!fs.existsSync(serverLog)) {
    return [];
  }
  const lines = fs.readFileSync(serverLog).subarray(from).toString('utf8').split('\n');
  return lines.flatMap((line, i) => (line.includes('panicked at') ? [line, lines[i + 1] ?? ''] : []));
}
