/**
 * A throw-away PKI for TLS tests, made with the `openssl` CLI in a fresh temporary directory:
 * a CA, a server certificate for 127.0.0.1 and localhost, and client certificates, each in the
 * forms Kafka's ssl.keystore.* configs take.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface TestCert {
  /** paths: the PKCS#8 private key, the certificate, key + certificate + CA in one PEM, a PKCS12 store */
  key: string;
  cert: string;
  keystorePem: string;
  p12: string;
  p12Password: string;
  /** the subject as `openssl x509 -subject -nameopt RFC2253` prints it */
  dn: string;
}

export interface TrustStoreOptions {
  password?: string;
  /** openssl's -certpbe: e.g. AES-256-CBC (its default), PBE-SHA1-3DES, NONE */
  certPbe?: string;
  /** openssl's -macalg: e.g. sha256 (its default), sha1 */
  macAlg?: string;
}

export interface TestPki {
  dir: string;
  /** path of the CA certificate (PEM) */
  caCert: string;
  server: TestCert;
  /** a client certificate with subject CN=<name>,OU=<ou>,O=Sluice */
  client(name: string, ou?: string): Promise<TestCert>;
  /** a certificate for an openssl -subj subject ("/O=Acme/CN=alice", with "\" escaping "/" and "+") */
  issue(subject: string, options?: { subjectAltName?: string }): Promise<TestCert>;
  /** a PKCS12 trust store holding the CA certificate (no key) */
  truststoreP12(options?: TrustStoreOptions): Promise<string>;
  remove(): Promise<void>;
}

const OPENSSL_CONFIG = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
`;

async function openssl(dir: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('openssl', args, { cwd: dir });
  return stdout;
}

/** An openssl -subj value escaped: "/" and "+" would start a new RDN or attribute, "\" escapes. */
export function subjectValue(value: string): string {
  return value.replace(/[\\/+]/g, '\\$&');
}

export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-pki-'));
  const config = join(dir, 'openssl.cnf');
  await writeFile(config, OPENSSL_CONFIG);
  const caCert = join(dir, 'ca.pem');
  const caKey = join(dir, 'ca.key');
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl(dir, [
    'req',
    '-config',
    config,
    '-x509',
    ...newKey,
    '-keyout',
    caKey,
    '-out',
    caCert,
    '-days',
    '2',
    '-subj',
    '/O=Sluice/CN=Sluice Test CA',
    '-extensions',
    'ca',
  ]);
  let issued = 0;
  let stores = 0;

  const issue = async (subject: string, options: { subjectAltName?: string } = {}): Promise<TestCert> => {
    const base = join(dir, `cert-${++issued}`);
    const key = `${base}.key`;
    const cert = `${base}.pem`;
    await openssl(dir, ['req', '-config', config, '-new', ...newKey, '-keyout', key, '-out', `${base}.csr`, '-utf8', '-subj', subject]);
    const extensions = [
      'basicConstraints = CA:FALSE',
      'keyUsage = critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage = serverAuth,clientAuth',
      ...(options.subjectAltName === undefined ? [] : [`subjectAltName = ${options.subjectAltName}`]),
    ];
    await writeFile(`${base}.ext`, extensions.join('\n') + '\n');
    const serial = `0x${randomBytes(8).toString('hex')}`;
    await openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      caCert,
      '-CAkey',
      caKey,
      '-set_serial',
      serial,
      '-days',
      '2',
      '-extfile',
      `${base}.ext`,
      '-out',
      cert,
    ]);
    const keystorePem = `${base}.keystore.pem`;
    await writeFile(keystorePem, (await Promise.all([key, cert, caCert].map((f) => readFile(f, 'utf8')))).join(''));
    const p12 = `${base}.p12`;
    const p12Password = randomBytes(6).toString('hex');
    await openssl(dir, [
      'pkcs12',
      '-export',
      '-inkey',
      key,
      '-in',
      cert,
      '-certfile',
      caCert,
      '-name',
      'sluice',
      '-out',
      p12,
      '-passout',
      `pass:${p12Password}`,
    ]);
    const subjectLine = await openssl(dir, ['x509', '-in', cert, '-noout', '-subject', '-nameopt', 'RFC2253']);
    return { key, cert, keystorePem, p12, p12Password, dn: subjectLine.trim().replace(/^subject=/, '') };
  };

  const server = await issue('/O=Sluice/CN=localhost', { subjectAltName: 'IP:127.0.0.1,DNS:localhost' });
  return {
    dir,
    caCert,
    server,
    issue,
    client: (name, ou = 'clients') => issue(`/O=Sluice/OU=${subjectValue(ou)}/CN=${subjectValue(name)}`),
    async truststoreP12(options = {}) {
      const out = join(dir, `truststore-${++stores}.p12`);
      const args = ['pkcs12', '-export', '-nokeys', '-in', caCert, '-out', out, '-passout', `pass:${options.password ?? ''}`];
      if (options.certPbe !== undefined) args.push('-certpbe', options.certPbe);
      if (options.macAlg !== undefined) args.push('-macalg', options.macAlg);
      await openssl(dir, args);
      return out;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
