/**
 * The certificates of a PKCS12 trust store (RFC 7292). Node opens a PKCS12 file only as a key
 * store (the pfx option needs a private key in it), so the certificates of a trust store are
 * taken out here: PBES2 (PBKDF2 with AES or 3DES) and the legacy PKCS12 3DES scheme, the MAC
 * checked with the password when one is given, as Java's KeyStore does.
 */
import { createDecipheriv, createHash, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { derChildren, derOid, readDer, type DerElement } from './ssl-principal.ts';

const OID = {
  data: '1.2.840.113549.1.7.1',
  encryptedData: '1.2.840.113549.1.7.6',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
  pbeWithSha1And3KeyTripleDesCbc: '1.2.840.113549.1.12.1.3',
};

const DIGESTS = new Map([
  ['1.3.14.3.2.26', { name: 'sha1', blockBytes: 64 }],
  ['2.16.840.1.101.3.4.2.4', { name: 'sha224', blockBytes: 64 }],
  ['2.16.840.1.101.3.4.2.1', { name: 'sha256', blockBytes: 64 }],
  ['2.16.840.1.101.3.4.2.2', { name: 'sha384', blockBytes: 128 }],
  ['2.16.840.1.101.3.4.2.3', { name: 'sha512', blockBytes: 128 }],
]);

const HMAC_PRFS = new Map([
  ['1.2.840.113549.2.7', 'sha1'],
  ['1.2.840.113549.2.8', 'sha224'],
  ['1.2.840.113549.2.9', 'sha256'],
  ['1.2.840.113549.2.10', 'sha384'],
  ['1.2.840.113549.2.11', 'sha512'],
]);

const CBC_CIPHERS = new Map([
  ['2.16.840.1.101.3.4.1.2', { name: 'aes-128-cbc', keyBytes: 16 }],
  ['2.16.840.1.101.3.4.1.22', { name: 'aes-192-cbc', keyBytes: 24 }],
  ['2.16.840.1.101.3.4.1.42', { name: 'aes-256-cbc', keyBytes: 32 }],
  ['1.2.840.113549.3.7', { name: 'des-ede3-cbc', keyBytes: 24 }],
]);

class Pkcs12Unsupported extends Error {}

/** Why a PKCS12 trust store could not be read. */
export class Pkcs12Error extends Error {
  override readonly name = 'Pkcs12Error';

  constructor(
    readonly kind: 'wrong-password' | 'password-needed' | 'unsupported' | 'unreadable',
    message: string,
  ) {
    super(message);
  }
}

/** The DER certificates of a PKCS12 trust store, its MAC checked when a password is given (as Java does). */
export function pkcs12Certificates(p12: Buffer, password: string | null): Buffer[] {
  try {
    const [, authSafe, macData] = derChildren(readDer(p12));
    const [contentType, content] = derChildren(expect(authSafe));
    if (derOid(expect(contentType).value) !== OID.data) throw new Pkcs12Unsupported('public-key integrity mode');
    const authenticatedSafe = derChildren(expect(content))[0]!.value;
    if (macData !== undefined && password !== null && !macMatches(macData, authenticatedSafe, password)) {
      throw new Pkcs12Error('wrong-password', 'keystore password was incorrect');
    }
    const certificates: Buffer[] = [];
    for (const contentInfo of derChildren(readDer(authenticatedSafe))) {
      const [type, value] = derChildren(contentInfo);
      const oid = derOid(expect(type).value);
      let safeContents: Buffer;
      if (oid === OID.data) {
        safeContents = derChildren(expect(value))[0]!.value;
      } else if (oid === OID.encryptedData) {
        if (password === null) throw new Pkcs12Error('password-needed', 'its certificates are encrypted');
        safeContents = decryptContent(derChildren(expect(value))[0]!, password);
      } else {
        throw new Pkcs12Unsupported(`content type ${oid}`);
      }
      certificates.push(...certificateBags(safeContents));
    }
    return certificates;
  } catch (err) {
    if (err instanceof Pkcs12Error) throw err;
    if (err instanceof Pkcs12Unsupported) throw new Pkcs12Error('unsupported', err.message);
    if (/bad decrypt/i.test((err as Error).message)) throw new Pkcs12Error('wrong-password', 'keystore password was incorrect');
    throw new Pkcs12Error('unreadable', (err as Error).message);
  }
}

function expect(element: DerElement | undefined): DerElement {
  if (element === undefined) throw new Error('malformed PKCS12 structure');
  return element;
}

function certificateBags(safeContents: Buffer): Buffer[] {
  const certificates: Buffer[] = [];
  for (const bag of derChildren(readDer(safeContents))) {
    const [bagId, bagValue] = derChildren(bag);
    if (derOid(expect(bagId).value) !== OID.certBag) continue;
    const [certId, certValue] = derChildren(derChildren(expect(bagValue))[0]!);
    if (derOid(expect(certId).value) !== OID.x509Certificate) continue;
    certificates.push(derChildren(expect(certValue))[0]!.value);
  }
  return certificates;
}

function decryptContent(encryptedData: DerElement, password: string): Buffer {
  const [, encryptedContentInfo] = derChildren(encryptedData);
  const [, algorithm, encrypted] = derChildren(expect(encryptedContentInfo));
  // encryptedContent is [0] IMPLICIT OCTET STRING: primitive, or constructed from chunks.
  const content = expect(encrypted);
  const ciphertext = content.tag === 0x80 ? content.value : Buffer.concat(derChildren(content).map((chunk) => chunk.value));
  const [algorithmOid, parameters] = derChildren(expect(algorithm));
  const oid = derOid(expect(algorithmOid).value);
  if (oid === OID.pbes2) {
    const [kdf, scheme] = derChildren(expect(parameters));
    const [kdfOid, kdfParameters] = derChildren(expect(kdf));
    if (derOid(expect(kdfOid).value) !== OID.pbkdf2) throw new Pkcs12Unsupported(`key derivation ${derOid(kdfOid!.value)}`);
    const [salt, iterations, ...rest] = derChildren(expect(kdfParameters));
    const prf = rest.find((e) => e.tag === 0x30);
    const prfOid = prf === undefined ? '1.2.840.113549.2.7' : derOid(derChildren(prf)[0]!.value);
    const digest = HMAC_PRFS.get(prfOid);
    const [cipherOid, iv] = derChildren(expect(scheme));
    const cipher = CBC_CIPHERS.get(derOid(expect(cipherOid).value));
    if (digest === undefined) throw new Pkcs12Unsupported(`PBKDF2 with ${prfOid}`);
    if (cipher === undefined) throw new Pkcs12Unsupported(`encryption ${derOid(cipherOid!.value)}`);
    const key = pbkdf2Sync(Buffer.from(password, 'utf8'), expect(salt).value, derInteger(iterations), cipher.keyBytes, digest);
    return decipher(cipher.name, key, expect(iv).value, ciphertext);
  }
  if (oid === OID.pbeWithSha1And3KeyTripleDesCbc) {
    const [salt, iterations] = derChildren(expect(parameters));
    const derive = (id: number, bytes: number): Buffer =>
      pkcs12Kdf('sha1', 64, bmpPassword(password), expect(salt).value, id, derInteger(iterations), bytes);
    return decipher('des-ede3-cbc', derive(1, 24), derive(2, 8), ciphertext);
  }
  throw new Pkcs12Unsupported(`encryption ${oid} (a legacy scheme such as RC2)`);
}

function decipher(name: string, key: Buffer, iv: Buffer, ciphertext: Buffer): Buffer {
  const d = createDecipheriv(name, key, iv);
  return Buffer.concat([d.update(ciphertext), d.final()]);
}

function macMatches(macData: DerElement, authenticatedSafe: Buffer, password: string): boolean {
  const [digestInfo, salt, iterations] = derChildren(macData);
  const [algorithm, expected] = derChildren(expect(digestInfo));
  const oid = derOid(derChildren(expect(algorithm))[0]!.value);
  const digest = DIGESTS.get(oid);
  if (digest === undefined) throw new Pkcs12Unsupported(`integrity algorithm ${oid}`);
  const macBytes = createHash(digest.name).digest().length;
  const key = pkcs12Kdf(
    digest.name,
    digest.blockBytes,
    bmpPassword(password),
    expect(salt).value,
    3,
    iterations === undefined ? 1 : derInteger(iterations),
    macBytes,
  );
  const actual = createHmac(digest.name, key).update(authenticatedSafe).digest();
  return actual.length === expect(expected).value.length && timingSafeEqual(actual, expected!.value);
}

function derInteger(element: DerElement | undefined): number {
  return expect(element).value.reduce((n, b) => n * 256 + b, 0);
}

/** The password as PKCS12's key derivation takes it: a null-terminated big-endian BMPString. */
function bmpPassword(password: string): Buffer {
  return Buffer.from(`${password}\0`, 'utf16le').swap16();
}

/** RFC 7292 appendix B.2: the key derivation PKCS12 uses for its MAC and its legacy encryption schemes. */
function pkcs12Kdf(
  digest: string,
  blockBytes: number,
  password: Buffer,
  salt: Buffer,
  id: number,
  iterations: number,
  bytes: number,
): Buffer {
  const repeatToBlocks = (b: Buffer): Buffer => {
    const out = Buffer.alloc(blockBytes * Math.ceil(b.length / blockBytes));
    for (let i = 0; i < out.length; i++) out[i] = b[i % b.length]!;
    return out;
  };
  const diversifier = Buffer.alloc(blockBytes, id);
  const input = Buffer.concat([repeatToBlocks(salt), repeatToBlocks(password)]);
  const output: Buffer[] = [];
  for (let produced = 0; produced < bytes; ) {
    let a = createHash(digest).update(diversifier).update(input).digest();
    for (let r = 1; r < iterations; r++) a = createHash(digest).update(a).digest();
    output.push(a);
    produced += a.length;
    for (let j = 0; j < input.length; j += blockBytes) {
      let carry = 1;
      for (let k = blockBytes - 1; k >= 0; k--) {
        const sum = input[j + k]! + a[k % a.length]! + carry;
        input[j + k] = sum & 0xff;
        carry = sum >> 8;
      }
    }
  }
  return Buffer.concat(output).subarray(0, bytes);
}

// ---------------------------------------------------------------------------------------------
// Protocols, cipher suites, server identity
