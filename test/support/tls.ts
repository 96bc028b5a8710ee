// Throw-away certificates for TLS tests: a CA and a server certificate for one host name, made by
// the openssl command line (Node cannot issue X.509 certificates itself).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  ca: string;
  key: string;
  cert: string;
}

export function makeCertificates(hostName: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'bp-tls-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  try {
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=Baseplate Test CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', `/CN=${hostName}`);
    writeFileSync(f('ext.cnf'), `subjectAltName=DNS:${hostName}\n`);
    ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', '2', '-extfile', f('ext.cnf'));
    return { ca: readFileSync(f('ca.pem'), 'utf8'), key: readFileSync(f('server.key'), 'utf8'), cert: readFileSync(f('server.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
