/**
 * Kafka's DefaultKafkaPrincipalBuilder serialize/deserialize: how a forwarding broker carries
 * the client's principal to the controller in an EnvelopeRequest (KIP-590). The bytes are a
 * DefaultPrincipalData message behind its int16 version (MessageUtil.toVersionPrefixedBytes).
 */
import { DecodeError, Reader, Writer } from '../../protocol/primitives.ts';
import { decodeDefaultPrincipalData, encodeDefaultPrincipalData } from '../../protocol/messages/default-principal-data.ts';

const PRINCIPAL_DATA_VERSION = 0;

export interface KafkaPrincipal {
  readonly principalType: string;
  readonly name: string;
  /** Authenticated with a delegation token. */
  readonly tokenAuthenticated: boolean;
}

/** Kafka's SerializationException from the principal serde: the controller answers PRINCIPAL_DESERIALIZATION_FAILURE. */
export class PrincipalSerdeError extends Error {}

/** `User:alice` as a principal: the type is what precedes the first colon, as KafkaPrincipal.toString writes it. */
export function parsePrincipal(principal: string, tokenAuthenticated = false): KafkaPrincipal {
  const colon = principal.indexOf(':');
  if (colon === -1) throw new PrincipalSerdeError(`Principal ${principal} has no type`);
  return { principalType: principal.slice(0, colon), name: principal.slice(colon + 1), tokenAuthenticated };
}

/** The principal as the broker's sessions and the authorizer name it (KafkaPrincipal.toString). */
export function principalString(principal: KafkaPrincipal): string {
  return `${principal.principalType}:${principal.name}`;
}

export function serializePrincipal(principal: KafkaPrincipal): Buffer {
  const w = new Writer(64);
  w.int16(PRINCIPAL_DATA_VERSION);
  encodeDefaultPrincipalData(
    w,
    { type: principal.principalType, name: principal.name, tokenAuthenticated: principal.tokenAuthenticated },
    PRINCIPAL_DATA_VERSION,
  );
  return w.toBuffer();
}

/** Throws PrincipalSerdeError for bytes that are not a principal of a version this serde reads. */
export function deserializePrincipal(bytes: Buffer): KafkaPrincipal {
  const r = new Reader(bytes);
  try {
    const version = r.int16();
    if (version !== PRINCIPAL_DATA_VERSION) throw new PrincipalSerdeError(`Invalid principal data version ${version}`);
    const data = decodeDefaultPrincipalData(r, version);
    return { principalType: data.type, name: data.name, tokenAuthenticated: data.tokenAuthenticated };
  } catch (err) {
    if (err instanceof DecodeError || err instanceof RangeError) throw new PrincipalSerdeError(`Malformed principal data: ${err.message}`);
    throw err;
  }
}
