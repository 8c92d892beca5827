/**
 * The nemesis: a seeded schedule of faults against the cluster, one at a time and now and then
 * two overlapping. Every fault is injected, held, healed: a SIGKILLed node is restarted, a
 * paused one continued, a partition lifted, a full disk drained and its node restarted.
 *
 * The schedule is a list of steps, each a primary fault and perhaps a second one starting
 * during it. planSchedule() draws it from the seed alone (the kinds in a shuffled deck, so a
 * short run sees each kind once); the targets of a step are drawn when it runs, from a
 * generator forked off the seed for that step, among the nodes the cluster state allows (the
 * active controller, a partition's leader, a node no other fault holds).
 */
import type { EioDisk, FullDisk } from './disks.ts';
import type { FaultNode } from './nodes.ts';
import { Prng } from './prng.ts';
import type { Topology } from './topology.ts';

export const FAULT_KINDS = [
  'kill-random',
  'kill-controller',
  'kill-leader',
  'pause',
  'isolate',
  'cut-link',
  'loss',
  'slow',
  'disk-full',
  'disk-eio',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds that may start while another fault holds: they pick their targets among the nodes left. */
const SECONDARY_KINDS: readonly FaultKind[] = ['kill-random', 'pause', 'isolate', 'cut-link', 'loss', 'slow'];

export interface PlannedFault {
  readonly kind: FaultKind;
  /** How long the fault is held before it heals (for a kill: how long the node stays down). */
  readonly holdMs: number;
}

export interface Step {
  readonly index: number;
  readonly primary: PlannedFault;
  /** A fault overlapping the primary, starting `delayMs` after it. */
  readonly secondary?: PlannedFault & { readonly delayMs: number };
  /** Quiet time after the step healed. */
  readonly gapMs: number;
}

export interface ScheduleOptions {
  readonly kinds: readonly FaultKind[];
  /** Enough steps for a run of this length (a step takes at least its hold and gap). */
  readonly durationMs: number;
  /** At least this many steps (a short run: one deck, every kind once). */
  readonly minSteps?: number;
  readonly sessionTimeoutMs: number;
  /** The chance that a step has an overlapping second fault. */
  readonly overlapChance?: number;
}

function holdRange(kind: FaultKind, sessionTimeoutMs: number): [number, number] {
  switch (kind) {
    case 'kill-random':
    case 'kill-controller':
    case 'kill-leader':
      return [1000, 6000];
    case 'pause':
      // Longer than the session: the controller fences the silent node, peers drop it from ISRs.
      return [sessionTimeoutMs + 1000, sessionTimeoutMs + 4000];
    default:
      return [4000, 10_000];
  }
}

export function planSchedule(seed: number, options: ScheduleOptions): Step[] {
  if (options.kinds.length === 0) return [];
  const rng = new Prng(seed);
  const secondaries = SECONDARY_KINDS.filter((k) => options.kinds.includes(k));
  const steps: Step[] = [];
  let deck: FaultKind[] = [];
  for (let plannedMs = 0; plannedMs < options.durationMs || steps.length < (options.minSteps ?? 0); ) {
    if (deck.length === 0) deck = shuffled(options.kinds, rng);
    const kind = deck.pop()!;
    const primary = { kind, holdMs: rng.int(...holdRange(kind, options.sessionTimeoutMs)) };
    let secondary: Step['secondary'];
    if (secondaries.length > 0 && rng.next() < (options.overlapChance ?? 0.3)) {
      const second = rng.pick(secondaries);
      secondary = { kind: second, holdMs: rng.int(...holdRange(second, options.sessionTimeoutMs)), delayMs: rng.int(0, primary.holdMs) };
    }
    const gapMs = rng.int(1000, 4000);
    steps.push({ index: steps.length, primary, secondary, gapMs });
    plannedMs += Math.max(primary.holdMs, secondary ? secondary.delayMs + secondary.holdMs : 0) + gapMs;
  }
  return steps;
}

function shuffled<T>(items: readonly T[], rng: Prng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function describeStep(step: Step): string {
  const p = `${step.primary.kind} ${step.primary.holdMs} ms`;
  const s = step.secondary ? ` + ${step.secondary.kind} ${step.secondary.holdMs} ms from +${step.secondary.delayMs} ms` : '';
  return `step ${step.index}: ${p}${s}`;
}

/** What the nemesis acts on. */
export interface NemesisTarget {
  readonly nodes: readonly FaultNode[];
  readonly topology: Topology;
  /** The node whose log dir is a small tmpfs, and the node whose log dir is the EIO filesystem. */
  readonly fullDisk: { readonly nodeId: number; readonly disk: FullDisk } | null;
  readonly eioDisk: { readonly nodeId: number; readonly disk: EioDisk } | null;
  readonly partitions: number;
  /** The active controller's node id, or -1 when none answers. */
  activeController(): Promise<number>;
  /** The leader of a partition of the workload's topic, or -1. */
  partitionLeader(partition: number): Promise<number>;
  log(line: string): void;
}

/** The faults after which a node may serve stale reads for a while: it still believes it leads. */
const CUTTING_OFF: ReadonlySet<FaultKind> = new Set(['pause', 'isolate', 'cut-link', 'loss', 'slow']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Nemesis {
  /** Faults injected, by kind. */
  readonly injected = new Map<FaultKind, number>();
  /**
   * When (Date.now()) a fault cut a live node off from the others or froze it: a paused or
   * isolated leader or group coordinator does not know it was replaced, and Kafka's clients
   * may read from it (ListOffsets below v4 and OffsetFetch carry no leader epoch).
   */
  readonly cutOff: { fromMs: number; untilMs: number }[] = [];
  /** Nodes a running fault holds (killed, paused, isolated, disk-faulted): a second fault leaves them alone. */
  private readonly held = new Set<number>();

  constructor(
    private readonly seed: number,
    private readonly target: NemesisTarget,
  ) {}

  /** Runs every step of the schedule (its planned length bounds it), each healed before the next. */
  async run(steps: readonly Step[]): Promise<void> {
    for (const step of steps) {
      this.target.log(describeStep(step));
      // One generator per fault: the primary's draws, made across awaits, cannot shift the secondary's.
      const base = new Prng(this.seed);
      const primary = this.inject(step.primary, base.fork(2 * step.index));
      const secondary = step.secondary
        ? sleep(step.secondary.delayMs).then(() => this.inject(step.secondary!, base.fork(2 * step.index + 1)))
        : Promise.resolve();
      await Promise.all([primary, secondary]);
      await sleep(step.gapMs);
    }
  }

  /** Whether a running fault holds node `id` (it brings the node back itself). */
  holds(id: number): boolean {
    return this.held.has(id);
  }

  private count(kind: FaultKind): void {
    this.injected.set(kind, (this.injected.get(kind) ?? 0) + 1);
  }

  private node(id: number): FaultNode {
    return this.target.nodes.find((n) => n.nodeId === id)!;
  }

  /** A running node no fault holds, preferring `wanted` when it is one. */
  private free(rng: Prng, wanted = -1): FaultNode | null {
    const candidates = this.target.nodes.filter((n) => n.running && !this.held.has(n.nodeId));
    const preferred = candidates.find((n) => n.nodeId === wanted);
    if (preferred !== undefined) return preferred;
    return candidates.length === 0 ? null : rng.pick(candidates);
  }

  private async inject(fault: PlannedFault, rng: Prng): Promise<void> {
    if (!CUTTING_OFF.has(fault.kind)) return this.injectFault(fault, rng);
    const fromMs = Date.now();
    try {
      await this.injectFault(fault, rng);
    } finally {
      this.cutOff.push({ fromMs, untilMs: Date.now() });
    }
  }

  private async injectFault(fault: PlannedFault, rng: Prng): Promise<void> {
    switch (fault.kind) {
      case 'kill-random':
        return this.kill(fault, this.free(rng));
      case 'kill-controller': {
        const id = await this.target.activeController();
        return this.kill(fault, this.free(rng, id), id);
      }
      case 'kill-leader': {
        const partition = rng.int(0, this.target.partitions - 1);
        const id = await this.target.partitionLeader(partition);
        return this.kill(fault, this.free(rng, id), id, `leader of partition ${partition}`);
      }
      case 'pause':
        return this.hold(
          fault,
          this.free(rng),
          (n) => n.pause(),
          (n) => n.resume(),
          'SIGSTOP',
          'SIGCONT',
        );
      case 'isolate':
        return this.isolate(fault, this.free(rng));
      case 'cut-link':
        return this.cutLink(fault, rng);
      case 'loss':
        return this.loss(fault, rng);
      case 'slow':
        return this.slow(fault, rng);
      case 'disk-full':
        return this.diskFull(fault);
      case 'disk-eio':
        return this.diskEio(fault);
    }
  }

  private async kill(fault: PlannedFault, node: FaultNode | null, wanted = -1, role = 'active controller'): Promise<void> {
    if (node === null) return this.target.log(`  ${fault.kind}: no free node, skipped`);
    const what = wanted === -1 ? '' : node.nodeId === wanted ? ` (${role})` : ` (the ${role} ${wanted} is not free)`;
    this.held.add(node.nodeId);
    this.count(fault.kind);
    try {
      this.target.log(`  SIGKILL node ${node.nodeId}${what}`);
      await node.kill('SIGKILL');
      await sleep(fault.holdMs);
      await this.restart(node);
    } finally {
      this.held.delete(node.nodeId);
    }
  }

  private async restart(node: FaultNode): Promise<void> {
    const t = Date.now();
    try {
      await node.start();
      this.target.log(`  node ${node.nodeId} restarted, ready in ${Date.now() - t} ms`);
    } catch (err) {
      this.target.log(`  node ${node.nodeId} restart: ${(err as Error).message}`);
    }
  }

  private async hold(
    fault: PlannedFault,
    node: FaultNode | null,
    on: (n: FaultNode) => void,
    off: (n: FaultNode) => void,
    onName: string,
    offName: string,
  ): Promise<void> {
    if (node === null) return this.target.log(`  ${fault.kind}: no free node, skipped`);
    this.held.add(node.nodeId);
    this.count(fault.kind);
    try {
      this.target.log(`  ${onName} node ${node.nodeId} for ${fault.holdMs} ms`);
      on(node);
      await sleep(fault.holdMs);
      off(node);
      this.target.log(`  ${offName} node ${node.nodeId}`);
    } finally {
      this.held.delete(node.nodeId);
    }
  }

  private async isolate(fault: PlannedFault, node: FaultNode | null): Promise<void> {
    if (node === null) return this.target.log(`  ${fault.kind}: no free node, skipped`);
    const peers = this.target.nodes.filter((n) => n.nodeId !== node.nodeId).map((n) => n.nodeId);
    const net = this.target.topology;
    return this.hold(
      fault,
      node,
      () => {
        for (const p of peers) net.blockLink(node.nodeId, p);
      },
      () => {
        for (const p of peers) net.unblockLink(node.nodeId, p);
      },
      'isolate (from its peers; clients still reach it)',
      'reconnect',
    );
  }

  private async cutLink(fault: PlannedFault, rng: Prng): Promise<void> {
    const ids = this.target.nodes.map((n) => n.nodeId);
    const a = rng.pick(ids);
    const b = rng.pick(ids.filter((id) => id !== a));
    this.count(fault.kind);
    this.target.log(`  cut link ${a} <-> ${b} for ${fault.holdMs} ms`);
    this.target.topology.blockLink(a, b);
    await sleep(fault.holdMs);
    this.target.topology.unblockLink(a, b);
    this.target.log(`  link ${a} <-> ${b} restored`);
  }

  private async loss(fault: PlannedFault, rng: Prng): Promise<void> {
    const id = rng.pick(this.target.nodes).nodeId;
    const percent = rng.int(10, 30);
    this.count(fault.kind);
    this.target.log(`  ${percent} % packet loss on node ${id} for ${fault.holdMs} ms`);
    this.target.topology.addLoss(id, percent);
    await sleep(fault.holdMs);
    this.target.topology.removeLoss(id, percent);
    this.target.log(`  packet loss on node ${id} removed`);
  }

  private async slow(fault: PlannedFault, rng: Prng): Promise<void> {
    const id = rng.pick(this.target.nodes).nodeId;
    const how = this.target.topology.netem ? 'netem delay 100 ms +- 50 ms' : 'tbf 2 Mbit/s';
    this.count(fault.kind);
    this.target.log(`  slow link (${how}) on node ${id} for ${fault.holdMs} ms`);
    this.target.topology.addSlow(id);
    await sleep(fault.holdMs);
    this.target.topology.removeSlow(id);
    this.target.log(`  slow link on node ${id} removed`);
  }

  /** Fills the node's tmpfs log dir, holds, drains it and restarts the node (a failed log dir stays offline until then). */
  private async diskFull(fault: PlannedFault): Promise<void> {
    const d = this.target.fullDisk;
    if (d === null || this.held.has(d.nodeId)) return this.target.log('  disk-full: no tmpfs node free, skipped');
    await this.diskFault(
      fault,
      d.nodeId,
      () => d.disk.fill(),
      () => d.disk.drain(),
      'fill the tmpfs log dir (ENOSPC)',
    );
  }

  private async diskEio(fault: PlannedFault): Promise<void> {
    const d = this.target.eioDisk;
    if (d === null || this.held.has(d.nodeId)) return this.target.log('  disk-eio: no eiofs node free, skipped');
    await this.diskFault(
      fault,
      d.nodeId,
      () => d.disk.fail(),
      () => d.disk.heal(),
      'make the eiofs log dir fail with EIO',
    );
  }

  private async diskFault(
    fault: PlannedFault,
    nodeId: number,
    on: () => void,
    off: () => void | Promise<void>,
    what: string,
  ): Promise<void> {
    const node = this.node(nodeId);
    this.held.add(nodeId);
    this.count(fault.kind);
    try {
      this.target.log(`  ${what} on node ${nodeId} for ${fault.holdMs} ms`);
      const failuresBefore = node.logDirFailures;
      on();
      await sleep(fault.holdMs);
      const alive = node.running;
      const noticed = node.logDirFailures > failuresBefore ? 'took its log dir offline' : 'logged no log dir failure';
      // A node that stops cleanly writes checkpoints: with the disk still failing it would hang or fail.
      await off();
      await node.stop();
      this.target.log(`  disk of node ${nodeId} healed (the node ${alive ? 'was running' : 'had exited'} and ${noticed}); restarting it`);
      await this.restart(node);
    } finally {
      this.held.delete(nodeId);
    }
  }
}
