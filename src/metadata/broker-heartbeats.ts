// Broker sessions on the active controller, as Kafka's BrokerHeartbeatManager keeps them: in
// memory only (a new active controller starts every registered broker's session afresh), the
// time of each broker's last heartbeat, the metadata offset it reported, and where it stands
// in a controlled shutdown. Pure bookkeeping: the controller owns the timer and the records.

/** Kafka's BrokerControlState: where a heartbeat moves a broker. */
export type BrokerControlState = 'FENCED' | 'UNFENCED' | 'CONTROLLED_SHUTDOWN' | 'SHUTDOWN_NOW';

export function isFencedState(state: BrokerControlState): boolean {
  return state === 'FENCED' || state === 'SHUTDOWN_NOW';
}

export interface BrokerStateTransition {
  readonly current: BrokerControlState;
  readonly next: BrokerControlState;
}

export interface HeartbeatIntent {
  readonly wantFence: boolean;
  readonly wantShutDown: boolean;
  readonly currentMetadataOffset: number;
}

interface BrokerSession {
  readonly id: number;
  lastContactMs: number;
  metadataOffset: number;
  /** The offset the controller's leadership moves reached when the shutdown began; -1: not shutting down. */
  controlledShutdownOffset: number;
  fenced: boolean;
  /**
   * This controller has heard from the broker (a registration or a heartbeat). A session only
   * assumed at activation is not evidence that another incarnation is alive.
   */
  heardFrom: boolean;
}

export class BrokerHeartbeatManager {
  private readonly sessions = new Map<number, BrokerSession>();

  constructor(
    private readonly nowMs: () => number,
    private readonly sessionTimeoutMs: number,
  ) {}

  /** Starts (or restarts) a session as if the broker was just heard from. */
  register(brokerId: number, fenced: boolean): void {
    const existing = this.sessions.get(brokerId);
    // As Kafka: a broker whose fencing changes keeps the offset it reported.
    const metadataOffset = existing !== undefined && existing.fenced !== fenced ? existing.metadataOffset : -1;
    if (existing === undefined) {
      this.sessions.set(brokerId, {
        id: brokerId,
        lastContactMs: 0,
        metadataOffset: -1,
        controlledShutdownOffset: -1,
        fenced,
        heardFrom: false,
      });
    }
    this.touch(brokerId, fenced, metadataOffset);
  }

  /**
   * Starts a session for a broker this controller found registered when it became active: it
   * gets a full session timeout before it is fenced (as Kafka does, so that a controller
   * failover fences nobody), but nothing was heard from it yet.
   */
  assume(brokerId: number, fenced: boolean): void {
    const heard = this.sessions.get(brokerId)?.heardFrom ?? false;
    this.register(brokerId, fenced);
    this.session(brokerId).heardFrom = heard;
  }

  /** A heartbeat: the broker is alive, reports `metadataOffset`, and is now (un)fenced. */
  touch(brokerId: number, fenced: boolean, metadataOffset: number): void {
    const session = this.session(brokerId);
    session.heardFrom = true;
    session.lastContactMs = this.nowMs();
    session.metadataOffset = metadataOffset;
    session.fenced = fenced;
    // A fenced broker leaves controlled shutdown: its next heartbeat is told to shut down at once.
    if (fenced) session.controlledShutdownOffset = -1;
  }

  fence(brokerId: number): void {
    const session = this.sessions.get(brokerId);
    if (session === undefined) return;
    session.fenced = true;
    session.controlledShutdownOffset = -1;
  }

  remove(brokerId: number): void {
    this.sessions.delete(brokerId);
  }

  has(brokerId: number): boolean {
    return this.sessions.has(brokerId);
  }

  /** Unfenced and heard from within broker.session.timeout.ms (Kafka's hasValidSession). */
  hasValidSession(brokerId: number): boolean {
    const session = this.sessions.get(brokerId);
    return session !== undefined && this.isLive(session);
  }

  /**
   * A live session this controller heard from: only that refuses a new incarnation of the id
   * (DUPLICATE_BROKER_REGISTRATION). A node restarted after a crash together with the
   * controller (a single node, or the controller's own node) registers at once instead of
   * waiting out a session it assumed at activation; a live old incarnation heartbeats within
   * an interval, is answered STALE_BROKER_EPOCH, and is then the one refused.
   */
  hasHeardFromLiveSession(brokerId: number): boolean {
    const session = this.sessions.get(brokerId);
    return session?.heardFrom === true && this.isLive(session);
  }

  private isLive(session: BrokerSession): boolean {
    if (session.fenced) return false;
    return session.lastContactMs + this.sessionTimeoutMs >= this.nowMs();
  }

  isShuttingDown(brokerId: number): boolean {
    return (this.sessions.get(brokerId)?.controlledShutdownOffset ?? -1) >= 0;
  }

  /** When the oldest unfenced session runs out (Infinity: none can). */
  nextCheckTimeMs(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const s of this.sessions.values()) {
      if (!s.fenced) next = Math.min(next, s.lastContactMs + this.sessionTimeoutMs);
    }
    return next;
  }

  /** The unfenced broker silent the longest, when its session has expired. */
  findOneStaleBroker(): number | undefined {
    let oldest: BrokerSession | undefined;
    for (const s of this.sessions.values()) {
      if (s.fenced) continue;
      if (oldest === undefined || s.lastContactMs < oldest.lastContactMs) oldest = s;
    }
    return oldest !== undefined && !this.isLive(oldest) ? oldest.id : undefined;
  }

  /** The lowest metadata offset reported by unfenced brokers that are not shutting down. */
  lowestActiveOffset(): number {
    let lowest = Number.POSITIVE_INFINITY;
    for (const s of this.sessions.values()) {
      if (s.fenced || s.controlledShutdownOffset >= 0) continue;
      lowest = Math.min(lowest, s.metadataOffset);
    }
    return lowest;
  }

  /** Records where the shutdown's leadership moves ended; the first heartbeat of the shutdown sets it. */
  maybeUpdateControlledShutdownOffset(brokerId: number, offset: number): void {
    const session = this.session(brokerId);
    if (session.fenced) throw new Error(`fenced broker ${brokerId} cannot enter controlled shutdown`);
    if (session.controlledShutdownOffset < 0) session.controlledShutdownOffset = offset;
  }

  private currentState(session: BrokerSession): Exclude<BrokerControlState, 'SHUTDOWN_NOW'> {
    if (session.controlledShutdownOffset >= 0) return 'CONTROLLED_SHUTDOWN';
    return session.fenced ? 'FENCED' : 'UNFENCED';
  }

  /**
   * Kafka's calculateNextBrokerState. `registrationOffset` is the offset of the broker's
   * RegisterBrokerRecord: it is unfenced once it has applied it. `hasLeaderships` says whether
   * it still leads a partition.
   */
  nextBrokerState(
    brokerId: number,
    request: HeartbeatIntent,
    registrationOffset: number,
    hasLeaderships: () => boolean,
  ): BrokerStateTransition {
    const session = this.session(brokerId);
    const current = this.currentState(session);
    const to = (next: BrokerControlState): BrokerStateTransition => ({ current, next });
    switch (current) {
      case 'FENCED':
        if (request.wantShutDown) return to('SHUTDOWN_NOW');
        if (!request.wantFence && request.currentMetadataOffset >= registrationOffset) return to('UNFENCED');
        return to('FENCED');
      case 'UNFENCED':
        if (request.wantFence) return to(request.wantShutDown ? 'SHUTDOWN_NOW' : 'FENCED');
        if (request.wantShutDown) return to(hasLeaderships() ? 'CONTROLLED_SHUTDOWN' : 'SHUTDOWN_NOW');
        return to('UNFENCED');
      case 'CONTROLLED_SHUTDOWN':
        if (hasLeaderships()) return to('CONTROLLED_SHUTDOWN');
        // Every active broker has seen the leadership moves: nobody still sends to this one.
        return to(session.controlledShutdownOffset <= this.lowestActiveOffset() ? 'SHUTDOWN_NOW' : 'CONTROLLED_SHUTDOWN');
    }
  }

  private session(brokerId: number): BrokerSession {
    const session = this.sessions.get(brokerId);
    if (session === undefined) throw new Error(`broker ${brokerId} is not registered`);
    return session;
  }
}
