// The voter set of the metadata quorum as KIP-853 keeps it in the log: VotersRecord and
// KRaftVersionRecord control records (raft-records in the spec), the history of both by
// offset (Kafka's KRaftControlRecordStateMachine: a follower that truncates its log falls
// back to the voter set before the truncated records), and the control batch a snapshot
// carries them in.

import {
  decodeKRaftVersionRecord,
  encodeKRaftVersionRecord,
  makeKRaftVersionRecord,
} from '../../../protocol/messages/k-raft-version-record.ts';
import {
  decodeVotersRecord,
  encodeVotersRecord,
  makeVotersRecord,
  makeVotersRecordEndpoint,
  makeVotersRecordKRaftVersionFeature,
  makeVotersRecordVoter,
} from '../../../protocol/messages/voters-record.ts';
import { Reader, Writer, ZERO_UUID } from '../../../protocol/primitives.ts';
import { ControlRecordType } from '../../../protocol/records/index.ts';
import { type BrokerConfig, parseListeners } from '../../config/broker-config.ts';
import { decodeRaftBatches, encodeRaftBatch } from './log.ts';
import type { RaftBatch } from './types.ts';

/** One listener of a controller: what VotersRecord, AddRaftVoter and DescribeQuorum carry. */
export interface RaftEndpoint {
  name: string;
  host: string;
  port: number;
}

/** The kraft.version range a replica supports (VotersRecord's KRaftVersionFeature). */
export interface KRaftVersionRange {
  min: number;
  max: number;
}

/** kraft.version 1 keeps the voter set in the log and lets it change (KIP-853); 0 is the static set. */
export const SUPPORTED_KRAFT_VERSIONS: KRaftVersionRange = { min: 0, max: 1 };

/** A voter: its id, the directory id of its metadata log directory, and its controller listeners. */
export interface RaftVoter {
  id: number;
  /** ZERO_UUID for a voter configured statically (controller.quorum.voters names no directory). */
  directoryId: string;
  endpoints: RaftEndpoint[];
  kraftVersion: KRaftVersionRange;
}

/** An immutable set of voters, by id. */
export class VoterSet {
  static readonly EMPTY = new VoterSet([]);
  private readonly byId: ReadonlyMap<number, RaftVoter>;

  constructor(voters: Iterable<RaftVoter>) {
    this.byId = new Map([...voters].sort((a, b) => a.id - b.id).map((v) => [v.id, v]));
  }

  get size(): number {
    return this.byId.size;
  }

  /** Voter ids, ascending. */
  ids(): number[] {
    return [...this.byId.keys()];
  }

  voters(): RaftVoter[] {
    return [...this.byId.values()];
  }

  get(id: number): RaftVoter | undefined {
    return this.byId.get(id);
  }

  has(id: number): boolean {
    return this.byId.has(id);
  }

  /**
   * Kafka's VoterNode.isVoter: the id must match, and the directory id too unless the set
   * has none for that voter (a statically configured voter matches any directory).
   */
  isVoter(id: number, directoryId: string): boolean {
    const voter = this.byId.get(id);
    if (voter === undefined) return false;
    return voter.directoryId === ZERO_UUID || voter.directoryId === directoryId;
  }

  majority(): number {
    return Math.floor(this.byId.size / 2) + 1;
  }

  /** This set with `voter` added, or replacing the voter of its id. */
  with(voter: RaftVoter): VoterSet {
    return new VoterSet([...this.voters().filter((v) => v.id !== voter.id), voter]);
  }

  without(id: number): VoterSet {
    return new VoterSet(this.voters().filter((v) => v.id !== id));
  }

  /** The endpoint of voter `id` on listener `listenerName`, else its first one. */
  endpointOf(id: number, listenerName: string | undefined): RaftEndpoint | undefined {
    const endpoints = this.byId.get(id)?.endpoints ?? [];
    return endpoints.find((e) => e.name === listenerName) ?? endpoints[0];
  }

  toString(): string {
    return `[${this.voters()
      .map((v) => `${v.id}:${v.directoryId}`)
      .join(', ')}]`;
  }
}

export function sameEndpoints(a: readonly RaftEndpoint[], b: readonly RaftEndpoint[]): boolean {
  const key = (endpoints: readonly RaftEndpoint[]) =>
    endpoints
      .map((e) => `${e.name}|${e.host}|${e.port}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}

/** A VotersRecord value (version 0), as the control record of type KRaftVoters carries it. */
export function encodeVotersValue(voters: VoterSet): Buffer {
  const w = new Writer(64);
  encodeVotersRecord(
    w,
    makeVotersRecord({
      version: 0,
      voters: voters.voters().map((v) =>
        makeVotersRecordVoter({
          voterId: v.id,
          voterDirectoryId: v.directoryId,
          endpoints: v.endpoints.map((e) => makeVotersRecordEndpoint(e)),
          kRaftVersionFeature: makeVotersRecordKRaftVersionFeature({
            minSupportedVersion: v.kraftVersion.min,
            maxSupportedVersion: v.kraftVersion.max,
          }),
        }),
      ),
    }),
    0,
  );
  return w.toBuffer();
}

export function decodeVotersValue(value: Buffer): VoterSet {
  const record = decodeVotersRecord(new Reader(value), 0);
  return new VoterSet(
    record.voters.map((v) => ({
      id: v.voterId,
      directoryId: v.voterDirectoryId,
      endpoints: v.endpoints.map((e) => ({ name: e.name, host: e.host, port: e.port })),
      kraftVersion: { min: v.kRaftVersionFeature.minSupportedVersion, max: v.kRaftVersionFeature.maxSupportedVersion },
    })),
  );
}

/** A KRaftVersionRecord value (version 0). */
export function encodeKRaftVersionValue(kraftVersion: number): Buffer {
  const w = new Writer(8);
  encodeKRaftVersionRecord(w, makeKRaftVersionRecord({ version: 0, kRaftVersion: kraftVersion }), 0);
  return w.toBuffer();
}

export function decodeKRaftVersionValue(value: Buffer): number {
  return decodeKRaftVersionRecord(new Reader(value), 0).kRaftVersion;
}

/** A KIP-853 control record found in the log: a kraft.version or a voter set, at its offset. */
export type KRaftControlRecord = { offset: number; kraftVersion: number } | { offset: number; voters: VoterSet };

/** The KRaftVersion and KRaftVoters records of `batches`, in order (other batches are skipped). */
export function kraftControlRecordsOf(batches: readonly RaftBatch[]): KRaftControlRecord[] {
  const out: KRaftControlRecord[] = [];
  for (const batch of batches) {
    if (!batch.control) continue;
    batch.records.forEach((value, i) => {
      const offset = batch.baseOffset + i;
      if (batch.controlType === ControlRecordType.KRaftVersion) out.push({ offset, kraftVersion: decodeKRaftVersionValue(value) });
      else if (batch.controlType === ControlRecordType.KRaftVoters) out.push({ offset, voters: decodeVotersValue(value) });
    });
  }
  return out;
}

/**
 * A value that control records at increasing offsets change (Kafka's LogHistory): the base
 * is what holds before any of them (the snapshot's, or the static configuration's).
 */
export class LogHistory<T> {
  private entries: { offset: number; value: T }[] = [];

  constructor(private base: T) {}

  /** The value after every entry, committed or not: what a replica acts on (KIP-853). */
  latest(): T {
    return this.entries[this.entries.length - 1]?.value ?? this.base;
  }

  /** Offset of the latest entry; -1 when the base value holds. */
  latestOffset(): number {
    return this.entries[this.entries.length - 1]?.offset ?? -1;
  }

  /** The value the state below `endOffset` was in (what a snapshot ending there carries). */
  valueBefore(endOffset: number): T {
    let value = this.base;
    for (const e of this.entries) {
      if (e.offset >= endOffset) break;
      value = e.value;
    }
    return value;
  }

  add(offset: number, value: T): void {
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.offset >= offset) throw new Error(`control record at ${offset} after one at ${last.offset}`);
    this.entries.push({ offset, value });
  }

  /** Forgets the entries at or above `offset` (the log was truncated there). */
  truncateFrom(offset: number): void {
    this.entries = this.entries.filter((e) => e.offset < offset);
  }

  reset(base: T): void {
    this.base = base;
    this.entries = [];
  }

  /** The base value and every entry's, oldest first. */
  values(): T[] {
    return [this.base, ...this.entries.map((e) => e.value)];
  }
}

/**
 * A snapshot of a kraft.version 1 log begins with a control batch of its KRaftVersionRecord
 * and one of its VotersRecord, ahead of the state machine's own content (which the listener
 * writes and reads alone).
 */
export function frameSnapshot(kraftVersion: number, voters: VoterSet, epoch: number, nowMs: number, content: Buffer): Buffer {
  const batch = (controlType: ControlRecordType, value: Buffer) =>
    encodeRaftBatch({ baseOffset: 0, epoch, appendTimeMs: nowMs, control: true, controlType, records: [value] });
  return Buffer.concat([
    batch(ControlRecordType.KRaftVersion, encodeKRaftVersionValue(kraftVersion)),
    batch(ControlRecordType.KRaftVoters, encodeVotersValue(voters)),
    content,
  ]);
}

const BATCH_HEADER_BYTES = 61;

/**
 * Splits a snapshot into its KIP-853 control records and the listener's content. A snapshot
 * without them (kraft.version 0) is all content.
 */
export function unframeSnapshot(snapshot: Buffer): { kraftVersion: number | null; voters: VoterSet | null; content: Buffer } {
  let position = 0;
  let kraftVersion: number | null = null;
  let voters: VoterSet | null = null;
  for (;;) {
    const batch = leadingKRaftBatch(snapshot, position);
    if (batch === null) break;
    for (const record of kraftControlRecordsOf([batch.batch])) {
      if ('voters' in record) voters = record.voters;
      else kraftVersion = record.kraftVersion;
    }
    position += batch.sizeBytes;
  }
  return { kraftVersion, voters, content: position === 0 ? snapshot : snapshot.subarray(position) };
}

function leadingKRaftBatch(buf: Buffer, position: number): { batch: RaftBatch; sizeBytes: number } | null {
  if (buf.length - position < BATCH_HEADER_BYTES) return null;
  const sizeBytes = 12 + buf.readInt32BE(position + 8);
  const magic = buf.readInt8(position + 16);
  if (magic !== 2 || sizeBytes < BATCH_HEADER_BYTES || position + sizeBytes > buf.length) return null;
  let batch: RaftBatch | undefined;
  try {
    [batch] = decodeRaftBatches(buf.subarray(position, position + sizeBytes));
  } catch {
    return null;
  }
  if (batch === undefined || !batch.control) return null;
  const kraft = batch.controlType === ControlRecordType.KRaftVersion || batch.controlType === ControlRecordType.KRaftVoters;
  return kraft ? { batch, sizeBytes } : null;
}

/** What a broker config says about this node's part in the voter set (KIP-853). */
export interface RaftMembership {
  voterDetails: RaftVoter[];
  directoryId: string;
  localEndpoints: RaftEndpoint[];
  listenerName?: string;
  kraftVersion: 0 | 1;
}

/**
 * The voter-set settings of a node: the static voters with their controller listener
 * (controller.quorum.voters names no directory id), this node's directory id and its
 * controller listeners as others reach them (advertised.listeners when it names them, else
 * listeners; a wildcard host takes this node's controller.quorum.voters host, an ephemeral
 * port is left out), the quorum's listener (the first of controller.listener.names). New logs
 * get kraft.version 1: the voters go into the log and can change.
 */
export function raftMembershipOf(config: BrokerConfig, directoryId: string | undefined): RaftMembership {
  const listenerName = config.controllerListenerNames[0];
  const voters = config.quorumVoters;
  const voterDetails = voters.map((v) => ({
    id: v.nodeId,
    directoryId: ZERO_UUID,
    endpoints: [{ name: listenerName ?? 'CONTROLLER', host: v.host, port: v.port }],
    kraftVersion: SUPPORTED_KRAFT_VERSIONS,
  }));
  const ownVoterHost = voters.find((v) => v.nodeId === config.nodeId)?.host;
  const advertisedText = config.get('advertised.listeners');
  const advertised = advertisedText === null ? [] : parseListeners(advertisedText, config.securityProtocolMap, 'advertised.listeners');
  const localEndpoints: RaftEndpoint[] = [];
  for (const name of config.controllerListenerNames) {
    const listener = advertised.find((l) => l.name === name) ?? config.listeners.find((l) => l.name === name);
    if (listener === undefined || listener.port === 0) continue;
    const wildcard = listener.host === '0.0.0.0' || listener.host === '::' || listener.host === '[::]';
    const host = wildcard ? ownVoterHost : listener.host === '' ? '127.0.0.1' : listener.host;
    if (host !== undefined) localEndpoints.push({ name, host, port: listener.port });
  }
  return {
    voterDetails,
    directoryId: directoryId ?? ZERO_UUID,
    localEndpoints,
    ...(listenerName !== undefined ? { listenerName } : {}),
    kraftVersion: 1,
  };
}
