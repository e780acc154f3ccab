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

/** The port of its BIG-IP simulator (embedded mode), whose `/_behaviour` a test changes as a
 * BIG-IP's state would change. */
export const bigipSimPort = port + 2;

/** Its data directory, fresh for every run. */
export const dataDir = path.join(os.tmpdir(), `lbdesk-e2e-${port}`);

/** The throw-away OpenLDAP the server signs directory users in with (server/tests/directory):
 * its directory, and its LDAPS and plain ports. */
export const ldapDir = path.join(os.tmpdir(), `lbdesk-e2e-ldap-${port}`);
export const ldapsPort = port + 10;
export const ldapPort = port + 11;

/** Takes `member` (a DN under ou=people) out of the directory group `group`, as the bank's
 * directory administrators would. */
export function removeFromGroup(group: string, member: string) {
  const socket = encodeURIComponent(path.join(ldapDir, 'ldapi'));
  const ldif = [
    `dn: cn=${group},ou=groups,dc=bank,dc=example`,
    'changetype: modify',
    'delete: member',
    `member: ${member},ou=people,dc=bank,dc=example`,
    '',
  ].join('\n');
  const admin = ['-x', '-D', 'cn=admin,dc=bank,dc=example', '-w', 'admin-secret'];
  execFileSync('ldapmodify', [...admin, '-H', `ldapi://${socket}`], { input: ldif });
}

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

/** The last 40 warning and error lines of the server's log from byte `from` on, colours removed. */
export function warnings(from = 0): string[] {
  if (!fs.existsSync(serverLog)) {
    return [];
  }
  const text = fs.readFileSync(serverLog).subarray(from).toString('utf8');
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  return lines.filter((line) => / (WARN|ERROR) /.test(line)).slice(-40);
}

/** The embedded API's kubeconfig, as its admin (from `lbdesk kubeconfig`), written once. */
function kubeconfig(): string {
  const file = path.join(dataDir, 'e2e-kubeconfig');
  if (!fs.existsSync(file)) {
    const text = execFileSync(bin, ['kubeconfig', '--data-dir', dataDir, '--api-listen', `127.0.0.1:${apiPort}`]);
    fs.writeFileSync(file, text, { mode: 0o600 });
  }
  return file;
}

/** Runs kubectl against the embedded API as its admin; its output. */
export function kubectl(args: string[], input?: string): string {
  return execFileSync('kubectl', ['--kubeconfig', kubeconfig(), ...args], { input, encoding: 'utf8' });
}

/** What one member cluster's CIS will post to BIG-IP now, from `lbdesk cis-post` (lbdesk's
 * model of CIS v2.20.2 over what the cluster holds). The command fails, and so the test,
 * when CIS would post an invalid declaration or hold a tenant back. */
export function cisPost(cluster = 'acp-region01'): {
  posts: { path: string; valid: boolean; body: { declaration: Record<string, any> } }[];
  ignored: { what: string; why: string }[];
} {
  const printed = execFileSync(bin, ['cis-post', '--kubeconfig', kubeconfig(), '--context', cluster], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(printed);
}

/** The tenant `tenant` as CIS will post it, if it posts it. */
export function postedTenant(tenant: string, cluster = 'acp-region01'): Record<string, any> | undefined {
  return cisPost(cluster).posts.find((p) => p.body.declaration[tenant])?.body.declaration[tenant];
}

/** The item `name` (a virtual server, pool, iRule…) of any tenant and application, as CIS will
 * post it, if it does. */
export function postedItem(name: string, cluster = 'acp-region01'): Record<string, any> | undefined {
  for (const post of cisPost(cluster).posts) {
    for (const tenant of Object.values(post.body.declaration)) {
      for (const app of Object.values(tenant ?? {})) {
        if (app && typeof app === 'object' && (app as Record<string, any>)[name]) {
          return (app as Record<string, any>)[name];
        }
      }
    }
  }
  return undefined;
}
