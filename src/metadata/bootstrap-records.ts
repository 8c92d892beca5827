/**
 * Records a new cluster starts with, beyond its metadata.version: what `sluice storage format
 * --add-scram` puts in the metadata log directory, as `kafka-storage format --add-scram` puts
 * them in bootstrap.checkpoint, so that the first admin can authenticate before any user
 * could be created over the wire. The active controller writes them once, with the
 * metadata.version, into an empty log; a log that has records ignores them.
 *
 * The file holds one framed metadata record per line, base64-encoded.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../../storage/file-system.ts';
import { SCRAM_MIN_ITERATIONS, scramCredential, scramMechanismType, SCRAM_MECHANISMS, type ScramMechanism } from '../security/scram.ts';
import { decodeMetadataRecord, encodeMetadataRecord } from './record-codec.ts';
import type { MetadataRecord } from './records.ts';

export const BOOTSTRAP_RECORDS_FILE = 'bootstrap.records';

/**
 * A `--add-scram` argument as kafka-storage reads it: `SCRAM-SHA-256=[name=alice,password=alice-secret]`,
 * optionally with `iterations=8192`; values may be double-quoted.
 */
export function parseAddScram(arg: string): MetadataRecord {
  const m = /^\s*([A-Za-z0-9-]+)\s*=\s*\[(.*)\]\s*$/.exec(arg);
  if (m === null) throw new Error(`Invalid --add-scram ${arg}: expected MECHANISM=[name=...,password=...]`);
  const mechanism = m[1]!.toUpperCase();
  if (!(SCRAM_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new Error(`The add-scram mechanism ${mechanism} is not supported: use ${SCRAM_MECHANISMS.join(' or ')}`);
  }
  const fields = new Map<string, string>();
  for (const part of m[2]!.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`Invalid --add-scram ${arg}: '${part}' is not key=value`);
    const key = part.slice(0, eq).trim().toLowerCase();
    const value = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (!['name', 'password', 'iterations'].includes(key)) throw new Error(`Invalid --add-scram ${arg}: unknown key ${key}`);
    fields.set(key, value);
  }
  const name = fields.get('name');
  const password = fields.get('password');
  if (name === undefined || name === '') throw new Error(`You must supply 'name' to add-scram`);
  if (password === undefined) throw new Error(`You must supply 'password' to add-scram`);
  const iterations = fields.has('iterations') ? Number(fields.get('iterations')) : SCRAM_MIN_ITERATIONS;
  if (!Number.isInteger(iterations)) throw new Error(`Invalid --add-scram ${arg}: iterations must be a whole number`);
  const credential = scramCredential(mechanism as ScramMechanism, password, randomBytes(32), iterations);
  return { type: 'UserScramCredentialRecord', data: { name, mechanism: scramMechanismType(mechanism as ScramMechanism), ...credential } };
}

export async function writeBootstrapRecords(
  dir: string,
  records: readonly MetadataRecord[],
  fs: FileSystem = nodeFileSystem,
): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const text = records.map((r) => `${encodeMetadataRecord(r).toString('base64')}\n`).join('');
  await fs.writeFile(join(dir, BOOTSTRAP_RECORDS_FILE), text);
}

/** The bootstrap records of a metadata log directory; none when the file is absent. */
export async function readBootstrapRecords(dir: string, fs: FileSystem = nodeFileSystem): Promise<MetadataRecord[]> {
  let text: string;
  try {
    text = await fs.readFile(join(dir, BOOTSTRAP_RECORDS_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const records: MetadataRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const record = decodeMetadataRecord(Buffer.from(line, 'base64'));
    if (record !== null) records.push(record);
  }
  return records;
}
