/**
 * AlterUserScramCredentials as Kafka's ScramControlManager decides it: each user named once per
 * request (a second deletion or upsertion of the same user fails it with DUPLICATE_RESOURCE,
 * and neither is applied), a known mechanism, a name that is not empty, Kafka's iteration
 * bounds, and deletions only of credentials that exist. Upsertions carry the salted password,
 * never the password; what is stored is RFC 5802's StoredKey and ServerKey.
 */
import { Errors } from '../../protocol/errors.ts';
import type {
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsRequestScramCredentialDeletion as Deletion,
  AlterUserScramCredentialsRequestScramCredentialUpsertion as Upsertion,
} from '../../protocol/messages/alter-user-scram-credentials.ts';
import { SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, scramCredentialFromSaltedPassword, scramMechanismOfType } from '../security/scram.ts';
import type { MetadataImage } from './image.ts';
import type { MetadataRecord } from './records.ts';

export interface ScramAlterResult {
  readonly user: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

interface Refusal {
  readonly errorCode: number;
  readonly errorMessage: string;
}

const DUPLICATE: Refusal = {
  errorCode: Errors.DUPLICATE_RESOURCE.code,
  errorMessage: 'A user credential cannot be altered twice in the same request',
};

export function planScramAlterations(
  image: MetadataImage,
  request: AlterUserScramCredentialsRequest,
): { records: MetadataRecord[]; results: ScramAlterResult[] } {
  const deletions = new Map<string, Deletion>();
  const upsertions = new Map<string, Upsertion>();
  const refused = new Map<string, Refusal>();
  for (const deletion of request.deletions) {
    if (refused.has(deletion.name)) continue;
    if (deletions.delete(deletion.name)) {
      refused.set(deletion.name, DUPLICATE);
      continue;
    }
    const refusal = nameAndMechanismRefusal(deletion.name, deletion.mechanism) ?? missingCredential(image, deletion);
    if (refusal === null) deletions.set(deletion.name, deletion);
    else refused.set(deletion.name, refusal);
  }
  for (const upsertion of request.upsertions) {
    if (refused.has(upsertion.name)) continue;
    if (deletions.delete(upsertion.name) || upsertions.delete(upsertion.name)) {
      refused.set(upsertion.name, DUPLICATE);
      continue;
    }
    const refusal = nameAndMechanismRefusal(upsertion.name, upsertion.mechanism) ?? iterationsRefusal(upsertion.iterations);
    if (refusal === null) upsertions.set(upsertion.name, upsertion);
    else refused.set(upsertion.name, refusal);
  }
  const records: MetadataRecord[] = [];
  const results: ScramAlterResult[] = [];
  for (const d of deletions.values()) {
    records.push({ type: 'RemoveUserScramCredentialRecord', data: { name: d.name, mechanism: d.mechanism } });
    results.push({ user: d.name, errorCode: Errors.NONE.code, errorMessage: null });
  }
  for (const u of upsertions.values()) {
    const credential = scramCredentialFromSaltedPassword(scramMechanismOfType(u.mechanism)!, u.saltedPassword, u.salt, u.iterations);
    records.push({ type: 'UserScramCredentialRecord', data: { name: u.name, mechanism: u.mechanism, ...credential } });
    results.push({ user: u.name, errorCode: Errors.NONE.code, errorMessage: null });
  }
  for (const [user, refusal] of refused) results.push({ user, ...refusal });
  return { records, results };
}

function nameAndMechanismRefusal(name: string, mechanism: number): Refusal | null {
  if (name === '') return { errorCode: Errors.UNACCEPTABLE_CREDENTIAL.code, errorMessage: 'Username must not be empty' };
  if (scramMechanismOfType(mechanism) === undefined) {
    return { errorCode: Errors.UNSUPPORTED_SASL_MECHANISM.code, errorMessage: 'Unknown SCRAM mechanism' };
  }
  return null;
}

function missingCredential(image: MetadataImage, deletion: Deletion): Refusal | null {
  return image.scramCredential(deletion.mechanism, deletion.name) === undefined
    ? { errorCode: Errors.RESOURCE_NOT_FOUND.code, errorMessage: 'Attempt to delete a user credential that does not exist' }
    : null;
}

function iterationsRefusal(iterations: number): Refusal | null {
  if (iterations < SCRAM_MIN_ITERATIONS) return { errorCode: Errors.UNACCEPTABLE_CREDENTIAL.code, errorMessage: 'Too few iterations' };
  if (iterations > SCRAM_MAX_ITERATIONS) return { errorCode: Errors.UNACCEPTABLE_CREDENTIAL.code, errorMessage: 'Too many iterations' };
  return null;
}
