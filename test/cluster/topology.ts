/**
 * The fault suite's network: one network namespace per node, each joined by a veth pair to a
 * bridge in the root namespace. The test process and its clients stay in the root namespace
 * and reach node i at `<subnet>.i` through the bridge (`<subnet>.254`); a node's faults are
 * nftables rules and tc qdiscs inside its own namespace, so nothing outside this run's
 * namespaces is touched.
 *
 *   const net = Topology.create(3);          // throws TopologyUnavailable when not root
 *   net.blockLink(1, 2);                     // both directions dropped, silently
 *   net.setLoss(3, 20);                      // 20 % of node 3's packets dropped
 *   net.setSlow(2, true);                    // netem delay where the kernel has it, else a tbf slow link
 *   net.destroy();                           // namespaces, veths, bridge
 *
 * Names carry the pid (`slf<pid>...`), so runs side by side do not collide; leftovers of a
 * run that died (a pid no longer alive) are removed at the next create.
 */
import { spawnSync } from 'node:child_process';

export class TopologyUnavailable extends Error {}

const PREFIX = 'slf';
const TABLE = 'sluice_faults';

function run(command: string, args: readonly string[], input?: string): { ok: boolean; out: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', input, timeout: 15_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function must(command: string, args: readonly string[], input?: string): string {
  const r = run(command, args, input);
  if (!r.ok) throw new Error(`${command} ${args.join(' ')}: ${r.out.trim()}`);
  return r.out;
}

/** Whether process `pid` exists (a run's names carry its pid). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Deletes the namespaces and bridges of earlier runs whose process is gone. */
function removeStale(): void {
  for (const line of run('ip', ['netns', 'list']).out.split('\n')) {
    const m = new RegExp(`^(${PREFIX}(\\d+)n\\d+)`).exec(line.trim());
    if (m && !pidAlive(Number(m[2]))) run('ip', ['netns', 'del', m[1]!]);
  }
  for (const line of run('ip', ['-o', 'link', 'show', 'type', 'bridge']).out.split('\n')) {
    const m = new RegExp(`^\\d+: (${PREFIX}(\\d+)b)[:@]`).exec(line.trim());
    if (m && !pidAlive(Number(m[2]))) run('ip', ['link', 'del', m[1]!]);
  }
}

/** A /24 in 10.77.x.0 that no interface of the root namespace uses. */
function freeSubnet(): string {
  const used = run('ip', ['-4', '-o', 'addr']).out;
  for (let i = 0; i < 200; i++) {
    const subnet = `10.77.${20 + ((process.pid + i) % 200)}`;
    if (!used.includes(`${subnet}.`)) return subnet;
  }
  throw new Error('no free 10.77.x.0/24 subnet');
}

/** Whether the kernel has the netem qdisc (many container kernels do not). */
function probeNetem(namespace: string): boolean {
  const ok = run('tc', ['-n', namespace, 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms']).ok;
  if (ok) run('tc', ['-n', namespace, 'qdisc', 'del', 'dev', 'lo', 'root']);
  return ok;
}

/** Why this process cannot build the namespaces, or null. */
export function topologyUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!run('ip', ['-V']).ok) return 'the ip command (iproute2) is missing';
  if (!run('nft', ['--version']).ok) return 'the nft command is missing (apt-get install nftables: scripts/install-test-clients.sh)';
  return null;
}

export class Topology {
  readonly bridge: string;
  readonly hostIp: string;
  /** True when slow links are netem delay; false when they are a tbf rate limit (no netem in the kernel). */
  readonly netem: boolean;
  private readonly blocked = new Map<number, Map<number, number>>();
  private readonly loss = new Map<number, number[]>();
  private readonly slow = new Map<number, number>();
  private destroyed = false;

  private constructor(
    readonly nodeCount: number,
    readonly subnet: string,
  ) {
    this.bridge = `${PREFIX}${process.pid}b`;
    this.hostIp = `${subnet}.254`;
    this.netem = false;
    try {
      this.build();
      this.netem = probeNetem(this.namespace(1));
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  /** Builds the namespaces; throws TopologyUnavailable when this process may not. */
  static create(nodeCount: number): Topology {
    const why = topologyUnavailable();
    if (why !== null) throw new TopologyUnavailable(why);
    removeStale();
    return new Topology(nodeCount, freeSubnet());
  }

  namespace(nodeId: number): string {
    return `${PREFIX}${process.pid}n${nodeId}`;
  }

  nodeIp(nodeId: number): string {
    return `${this.subnet}.${nodeId}`;
  }

  /** The host side of node `nodeId`'s veth pair (on the bridge); the node side is `eth0` in its namespace. */
  hostVeth(nodeId: number): string {
    return `${PREFIX}${process.pid}h${nodeId}`;
  }

  private build(): void {
    must('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    must('ip', ['addr', 'add', `${this.hostIp}/24`, 'dev', this.bridge]);
    must('ip', ['link', 'set', this.bridge, 'up']);
    for (let id = 1; id <= this.nodeCount; id++) {
      const ns = this.namespace(id);
      const peer = `${PREFIX}${process.pid}p${id}`;
      must('ip', ['netns', 'add', ns]);
      must('ip', ['link', 'add', this.hostVeth(id), 'type', 'veth', 'peer', 'name', peer]);
      must('ip', ['link', 'set', peer, 'netns', ns]);
      must('ip', ['-n', ns, 'link', 'set', peer, 'name', 'eth0']);
      must('ip', ['-n', ns, 'addr', 'add', `${this.nodeIp(id)}/24`, 'dev', 'eth0']);
      must('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
      must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
      must('ip', ['link', 'set', this.hostVeth(id), 'master', this.bridge]);
      must('ip', ['link', 'set', this.hostVeth(id), 'up']);
      // Base chains that jump to the fault chains, which are rewritten as faults come and go.
      must(
        'ip',
        ['netns', 'exec', ns, 'nft', '-f', '-'],
        [
          `table inet ${TABLE} {`,
          '  chain partition_in { }',
          '  chain partition_out { }',
          '  chain loss { }',
          '  chain input { type filter hook input priority 0; policy accept; jump partition_in; jump loss; }',
          '  chain output { type filter hook output priority 0; policy accept; jump partition_out; jump loss; }',
          '}',
        ].join('\n'),
      );
    }
  }

  /** Drops every packet between nodes a and b, both ways (each fault adds one block; unblock removes it). */
  blockLink(a: number, b: number): void {
    this.adjustBlock(a, b, 1);
  }

  unblockLink(a: number, b: number): void {
    this.adjustBlock(a, b, -1);
  }

  private adjustBlock(a: number, b: number, delta: number): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const peers = this.blocked.get(from) ?? new Map<number, number>();
      const n = (peers.get(to) ?? 0) + delta;
      if (n > 0) peers.set(to, n);
      else peers.delete(to);
      this.blocked.set(from, peers);
      this.writePartition(from);
    }
  }

  private writePartition(nodeId: number): void {
    const ns = this.namespace(nodeId);
    const ips = [...(this.blocked.get(nodeId)?.keys() ?? [])].map((p) => this.nodeIp(p));
    const rules = [`flush chain inet ${TABLE} partition_in`, `flush chain inet ${TABLE} partition_out`];
    if (ips.length > 0) {
      rules.push(`add rule inet ${TABLE} partition_in ip saddr { ${ips.join(', ')} } drop`);
      rules.push(`add rule inet ${TABLE} partition_out ip daddr { ${ips.join(', ')} } drop`);
    }
    must('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], rules.join('\n'));
  }

  /** Adds a packet-loss fault of `percent` on node `nodeId` (in and out); the strongest active one applies. */
  addLoss(nodeId: number, percent: number): void {
    this.loss.set(nodeId, [...(this.loss.get(nodeId) ?? []), percent]);
    this.writeLoss(nodeId);
  }

  removeLoss(nodeId: number, percent: number): void {
    const active = [...(this.loss.get(nodeId) ?? [])];
    const i = active.indexOf(percent);
    if (i >= 0) active.splice(i, 1);
    this.loss.set(nodeId, active);
    this.writeLoss(nodeId);
  }

  private writeLoss(nodeId: number): void {
    const percent = Math.max(0, ...(this.loss.get(nodeId) ?? []));
    const rules = [`flush chain inet ${TABLE} loss`];
    if (percent > 0) rules.push(`add rule inet ${TABLE} loss numgen random mod 100 < ${percent} drop`);
    must('ip', ['netns', 'exec', this.namespace(nodeId), 'nft', '-f', '-'], rules.join('\n'));
  }

  /**
   * Slows node `nodeId`'s link both ways: netem delay (100 ms +- 50 ms) where the kernel has
   * netem, else a 2 Mbit/s token bucket whose queue delays what exceeds the rate.
   */
  addSlow(nodeId: number): void {
    const n = (this.slow.get(nodeId) ?? 0) + 1;
    this.slow.set(nodeId, n);
    if (n === 1)
      for (const [ns, dev] of this.nodeLinks(nodeId)) must('tc', [...ns, 'qdisc', 'replace', 'dev', dev, 'root', ...this.slowQdisc()]);
  }

  removeSlow(nodeId: number): void {
    const n = Math.max(0, (this.slow.get(nodeId) ?? 0) - 1);
    this.slow.set(nodeId, n);
    if (n === 0) for (const [ns, dev] of this.nodeLinks(nodeId)) run('tc', [...ns, 'qdisc', 'del', 'dev', dev, 'root']);
  }

  private slowQdisc(): string[] {
    return this.netem ? ['netem', 'delay', '100ms', '50ms'] : ['tbf', 'rate', '2mbit', 'burst', '16kb', 'latency', '400ms'];
  }

  /** Both egress sides of node `nodeId`'s link: its eth0, and the host side toward it. */
  private nodeLinks(nodeId: number): [string[], string][] {
    return [
      [['-n', this.namespace(nodeId)], 'eth0'],
      [[], this.hostVeth(nodeId)],
    ];
  }

  /** Removes every network fault (the namespaces stay). */
  healAll(): void {
    if (this.destroyed) return;
    this.blocked.clear();
    this.loss.clear();
    for (let id = 1; id <= this.nodeCount; id++) {
      this.writePartition(id);
      this.writeLoss(id);
      if ((this.slow.get(id) ?? 0) > 0) {
        this.slow.set(id, 1);
        this.removeSlow(id);
      }
    }
  }

  /** Deletes the namespaces (and with them the veths) and the bridge. Safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (let id = 1; id <= this.nodeCount; id++) run('ip', ['netns', 'del', this.namespace(id)]);
    run('ip', ['link', 'del', this.bridge]);
  }
}
