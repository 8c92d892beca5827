// A classic consumer group (Kafka's GroupMetadata / ClassicGroup): its members, the
// generation they agreed on, and where it stands in the rebalance state machine.

export enum GroupState {
  Empty = 'Empty',
  PreparingRebalance = 'PreparingRebalance',
  CompletingRebalance = 'CompletingRebalance',
  Stable = 'Stable',
  Dead = 'Dead',
}

const VALID_PREVIOUS_STATES: Record<GroupState, GroupState[]> = {
  [GroupState.Empty]: [GroupState.PreparingRebalance],
  [GroupState.PreparingRebalance]: [GroupState.Stable, GroupState.CompletingRebalance, GroupState.Empty],
  [GroupState.CompletingRebalance]: [GroupState.PreparingRebalance],
  [GroupState.Stable]: [GroupState.CompletingRebalance],
  [GroupState.Dead]: [GroupState.Stable, GroupState.PreparingRebalance, GroupState.CompletingRebalance, GroupState.Empty, GroupState.Dead],
};

export interface Protocol {
  name: string;
  metadata: Buffer;
}

/**
 * A member's protocols as the set of names it is: the first occurrence of a name keeps its
 * place in the preference order and its metadata, later ones are dropped. A JoinGroup that
 * names a protocol twice (`range`, `range`) supports it once. Kafka keeps such duplicates
 * (JoinGroupRequestProtocolCollection is an ImplicitLinkedHashMultiCollection) and then
 * counts the protocol twice for one member, so no protocol is common to all members and the
 * rebalance fails; treating the list as a set is what the protocol means.
 */
export function uniqueProtocols(protocols: readonly Protocol[]): Protocol[] {
  const seen = new Set<string>();
  const unique: Protocol[] = [];
  for (const p of protocols) {
    if (seen.has(p.name)) continue;
    seen.add(p.name);
    unique.push(p);
  }
  return unique;
}

export interface JoinResult {
  errorCode: number;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leaderId: string;
  memberId: string;
  skipAssignment: boolean;
  /** Filled for the leader only: every member's metadata for the selected protocol. */
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface SyncResult {
  errorCode: number;
  protocolType: string | null;
  protocolName: string | null;
  assignment: Buffer;
}

export class Member {
  assignment: Buffer = Buffer.alloc(0);
  awaitingJoin: ((result: JoinResult) => void) | null = null;
  awaitingSync: ((result: SyncResult) => void) | null = null;
  heartbeatDeadlineMs = 0;

  constructor(
    public memberId: string,
    readonly groupInstanceId: string | null,
    readonly clientId: string,
    readonly clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public protocols: Protocol[],
  ) {}

  metadataFor(protocolName: string): Buffer {
    const protocol = this.protocols.find((p) => p.name === protocolName);
    if (!protocol) throw new Error(`member ${this.memberId} does not support protocol ${protocolName}`);
    return protocol.metadata;
  }

  /** Same protocols with the same metadata, in the same order. */
  matches(protocols: Protocol[]): boolean {
    if (protocols.length !== this.protocols.length) return false;
    return protocols.every((p, i) => {
      const mine = this.protocols[i];
      return mine !== undefined && p.name === mine.name && p.metadata.equals(mine.metadata);
    });
  }
}

export class Group {
  state = GroupState.Empty;
  stateTimestampMs: number;
  generationId = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  readonly members = new Map<string, Member>();
  readonly staticMembers = new Map<string, string>();
  /** Members told MEMBER_ID_REQUIRED (JoinGroup v4+) that have not joined with it yet. */
  readonly pendingMembers = new Set<string>();
  /** Members that have joined the current generation but not yet sent SyncGroup. */
  readonly pendingSyncMembers = new Set<string>();
  newMemberAdded = false;

  constructor(
    readonly groupId: string,
    nowMs: number,
  ) {
    this.stateTimestampMs = nowMs;
  }

  is(state: GroupState): boolean {
    return this.state === state;
  }

  transitionTo(state: GroupState, nowMs: number): void {
    if (!VALID_PREVIOUS_STATES[state].includes(this.state)) {
      throw new Error(`group ${this.groupId}: illegal transition ${this.state} -> ${state}`);
    }
    this.state = state;
    this.stateTimestampMs = nowMs;
  }

  get size(): number {
    return this.members.size;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId;
  }

  add(member: Member): void {
    if (this.members.size === 0) this.protocolType = member.protocolType;
    if (this.leaderId === null) this.leaderId = member.memberId;
    this.members.set(member.memberId, member);
    if (member.groupInstanceId !== null) this.staticMembers.set(member.groupInstanceId, member.memberId);
    this.pendingMembers.delete(member.memberId);
  }

  remove(memberId: string): Member | undefined {
    const member = this.members.get(memberId);
    if (!member) return undefined;
    this.members.delete(memberId);
    this.pendingSyncMembers.delete(memberId);
    if (member.groupInstanceId !== null) this.staticMembers.delete(member.groupInstanceId);
    if (this.leaderId === memberId) {
      const next = this.members.keys().next();
      this.leaderId = next.done ? null : next.value;
    }
    return member;
  }

  staticMemberId(groupInstanceId: string | null): string | undefined {
    return groupInstanceId === null ? undefined : this.staticMembers.get(groupInstanceId);
  }

  /** A static member whose instance id is now held by another member id has been fenced. */
  isStaticMemberFenced(groupInstanceId: string | null, memberId: string): boolean {
    if (groupInstanceId === null) return false;
    const current = this.staticMembers.get(groupInstanceId);
    return current !== undefined && current !== memberId;
  }

  /** The member with this id; only for ids the caller found in the group. */
  memberOf(memberId: string): Member {
    const member = this.members.get(memberId);
    if (member === undefined) throw new Error(`group ${this.groupId} has no member ${memberId}`);
    return member;
  }

  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): Member {
    const member = this.memberOf(oldMemberId);
    this.members.delete(oldMemberId);
    member.memberId = newMemberId;
    this.members.set(newMemberId, member);
    this.staticMembers.set(groupInstanceId, newMemberId);
    if (this.leaderId === oldMemberId) this.leaderId = newMemberId;
    if (this.pendingSyncMembers.delete(oldMemberId)) this.pendingSyncMembers.add(newMemberId);
    return member;
  }

  awaitingJoinCount(): number {
    let n = 0;
    for (const m of this.members.values()) if (m.awaitingJoin) n++;
    return n;
  }

  hasAllMembersJoined(): boolean {
    return this.awaitingJoinCount() === this.members.size && this.pendingMembers.size === 0;
  }

  /** How many members support each protocol; a member counts once per name. */
  private supportCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const m of this.members.values()) {
      for (const name of new Set(m.protocols.map((p) => p.name))) counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    return counts;
  }

  /** Protocols every member supports. */
  private candidateProtocols(): string[] {
    return [...this.supportCounts()].filter(([, n]) => n === this.members.size).map(([name]) => name);
  }

  /** Kafka's vote: each member votes for its most preferred candidate; most votes wins. */
  selectProtocol(): string {
    const candidates = new Set(this.candidateProtocols());
    if (candidates.size === 0) throw new Error(`group ${this.groupId}: no protocol common to all members`);
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      // Every member supports every candidate, so each has one to vote for.
      const choice = m.protocols.find((p) => candidates.has(p.name));
      if (choice === undefined) throw new Error(`group ${this.groupId}: member ${m.memberId} supports no common protocol`);
      votes.set(choice.name, (votes.get(choice.name) ?? 0) + 1);
    }
    let best = '';
    let bestVotes = -1;
    for (const [name, n] of votes) {
      if (n > bestVotes) {
        best = name;
        bestVotes = n;
      }
    }
    return best;
  }

  /** Whether a joining member's protocol type and protocols fit the group. */
  supportsProtocols(protocolType: string, protocols: Protocol[]): boolean {
    if (this.is(GroupState.Empty)) return protocolType.length > 0 && protocols.length > 0;
    if (this.protocolType !== protocolType) return false;
    const counts = this.supportCounts();
    return protocols.some((p) => counts.get(p.name) === this.members.size);
  }

  rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  /** Moves to the next generation once every member has rejoined (or been dropped). */
  initNextGeneration(nowMs: number): void {
    if (this.members.size > 0) {
      // Chosen first: should it throw, the group has not moved to a generation half made.
      const protocolName = this.selectProtocol();
      this.generationId++;
      this.protocolName = protocolName;
      this.transitionTo(GroupState.CompletingRebalance, nowMs);
      this.pendingSyncMembers.clear();
      for (const id of this.members.keys()) this.pendingSyncMembers.add(id);
    } else {
      // Kafka's ClassicGroup keeps the protocol type of an emptied group: it stays a consumer
      // group (as tools show it), whose offsets expire a retention period after it emptied.
      this.generationId++;
      this.protocolName = null;
      this.transitionTo(GroupState.Empty, nowMs);
    }
    this.newMemberAdded = false;
  }

  allMembers(): Member[] {
    return [...this.members.values()];
  }
}
