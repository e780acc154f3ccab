// The server under test: where it listens, where it keeps its data and log, and kubectl against
// its embedded Kubernetes API.
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** The port the server under test listens on. */
export const port = Number(process.env.LBDESK_E2E_PORT ?? 3917);

/** The port of its embedded Kubernetes API. */
export const apiPort = port + 1;

/** The lbdesk binary under test. */
export const bin = process.env.LBDESK_BIN ?? path.resolve(__dirname, '../target/debug/lbdesk');

/** Its data directory, fresh for every run. */
export const dataDir = path.join(os.tmpdir(), `lbdesk-e2e-${port}`);

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

/** Runs kubectl against the embedded API as its admin (from `lbdesk kubeconfig`); its output. */
export function kubectl(args: string[], input?: string): string {
  const kubeconfig = path.join(dataDir, 'e2e-kubeconfig');
  if (!fs.existsSync(kubeconfig)) {
    const text = execFileSync(bin, ['kubeconfig', '--data-dir', dataDir, '--api-listen', `127.0.0.1:${apiPort}`]);
    fs.writeFileSync(kubeconfig, text, { mode: 0o600 });
  }
  return execFileSync('kubectl', ['--kubeconfig', kubeconfig, ...args], { input, encoding: 'utf8' });
}
