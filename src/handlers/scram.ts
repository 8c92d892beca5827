/**
 * SCRAM credentials: AlterUserScramCredentials is decided by the active controller (brokers
 * forward it) and DescribeUserScramCredentials is answered from the broker's metadata image, as
 * Kafka's ScramImage describes it: every user with a credential when no user is named, else
 * each named user once, RESOURCE_NOT_FOUND for a user without one. Salts and keys never leave.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterUserScramCredentialsResponse,
  type AlterUserScramCredentialsRequest,
  type AlterUserScramCredentialsResponse,
} from '../../protocol/messages/alter-user-scram-credentials.ts';
import {
  makeDescribeUserScramCredentialsResponse,
  type DescribeUserScramCredentialsRequest,
  type DescribeUserScramCredentialsResponse,
  type DescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult as DescribeResult,
} from '../../protocol/messages/describe-user-scram-credentials.ts';
import type { QuorumController } from '../metadata/controller.ts';
import type { MetadataImage } from '../metadata/image.ts';

export async function handleAlterUserScramCredentials(
  controller: QuorumController,
  request: AlterUserScramCredentialsRequest,
): Promise<AlterUserScramCredentialsResponse> {
  const results = await controller.alterUserScramCredentials(request);
  return makeAlterUserScramCredentialsResponse({ results: results.map((r) => ({ ...r })) });
}

export function handleDescribeUserScramCredentials(
  image: MetadataImage,
  request: DescribeUserScramCredentialsRequest,
): DescribeUserScramCredentialsResponse {
  const credentials = new Map<string, { mechanism: number; iterations: number }[]>();
  for (const { user, mechanism, credential } of image.allScramCredentials()) {
    const infos = credentials.get(user) ?? [];
    infos.push({ mechanism, iterations: credential.iterations });
    credentials.set(user, infos);
  }
  const describe = (user: string): DescribeResult => ({
    user,
    errorCode: Errors.NONE.code,
    errorMessage: null,
    credentialInfos: [...(credentials.get(user) ?? [])].sort((a, b) => a.mechanism - b.mechanism),
  });
  if (request.users === null || request.users.length === 0) {
    return makeDescribeUserScramCredentialsResponse({ results: [...credentials.keys()].sort().map(describe) });
  }
  const counts = new Map<string, number>();
  for (const { name } of request.users) counts.set(name, (counts.get(name) ?? 0) + 1);
  const results: DescribeResult[] = [];
  for (const [user, count] of counts) {
    if (count > 1) {
      results.push({
        user,
        errorCode: Errors.DUPLICATE_RESOURCE.code,
        errorMessage: 'Cannot describe SCRAM credentials for the same user twice in a single request',
        credentialInfos: [],
      });
    } else if (!credentials.has(user)) {
      results.push({
        user,
        errorCode: Errors.RESOURCE_NOT_FOUND.code,
        errorMessage: 'Attempt to describe a user credential that does not exist',
        credentialInfos: [],
      });
    } else {
      results.push(describe(user));
    }
  }
  return makeDescribeUserScramCredentialsResponse({ results });
}
