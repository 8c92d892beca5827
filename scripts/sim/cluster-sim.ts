// Whole brokers in the simulation: real `Broker` instances (src/broker.ts) on the runtime
// seams — a SimClock each, a seeded Random, the SimNetwork bound to the node's address and a
// MemoryFileSystem as its disk — with idempotent producers and a consumer group whose members
// come and go, built on src/client/, and a nemesis that kills processes, crashes machines
// (losing what was not fsynced), partitions the network, resets connections and jumps clocks.
// The brokers keep Kafka's default flush settings: power failures are held to KIP-966's
// bound (power-bound.ts), within which no acknowledged record may be lost.
// Every event is followed by the invariant checks; the run ends by healing everything and
// checking that every acknowledged and every consumed record is in the final logs.
//
// Three combined broker,controller nodes; on some seeds three controllers and two brokers.

import { pino } from 'pino';
import { MemoryFileSystem } from '../../storage/memory-file-system.ts';
import { Broker } from '../../src/broker.ts';
import { coordinatorPartitionFor } from '../../src/coordinator/partitioning.ts';
import { BrokerConfig } from '../../src/config/index.ts';
import type { Logger } from '../../src/observability/logger.ts';
import type { Runtime } from '../../src/runtime/index.ts';
import { SimProducer, createTopic, readFinalLog, type ClientContext } from './clients.ts';
import { SimConsumerGroup } from './consumer.ts';
import { SIM_EPOCH_MS, SimClock } from './clock.ts';
import { brokerRaftView, brokerReplicaViews } from './inspect.ts';
import { InvariantChecker } from './invariants.ts';
import { PowerLossBound } from './power-bound.ts';
import { SimNetwork } from './network.ts';
import { Prng, seededRandom } from './random.ts';
import type { SimResult } from './result.ts';
import { Owner, Scheduler, describe } from './scheduler.ts';
import { realResources, realResourcesSince } from './real-io.ts';
import { captureUnhandledRejections } from './unhandled.ts';

export interface ClusterSimOptions {
  seed: number;
  /** Virtual time the workload and the nemesis run, after the cluster is up; default 20 s. */
  durationMs?: number;
  /** Most events to run; default 2 000 000. */
  maxSteps?: number;
  /**
   * Machine crashes that lose what was not fsynced, besides process kills; default true.
   * Partition logs keep Kafka's default flush settings, so an acknowledgement means written to
   * every in-sync replica's page cache. Broker crashes are held to KIP-966's bound on
   * unclean shutdowns (power-bound.ts). The metadata log fsyncs before it counts a record, as
   * Kafka's KafkaRaftClient does.
   */
  powerFailures?: boolean;
  /** Run on after a violation (to see where it leads) instead of stopping at the first. */
  keepGoing?: boolean;
}

type Roles = 'broker,controller' | 'controller' | 'broker';

interface SimNode {
  id: number;
  roles: Roles;
  host: string;
  disk: MemoryFileSystem;
  incarnation: number;
  owner: Owner;
  clock: SimClock;
  broker: Broker | null;
  started: boolean;
}

const TOPIC = 'sim';
const PARTITIONS = 3;
const GROUP = 'sim-group';
const OFFSETS_TOPIC = '__consumer_offsets';
const OFFSETS_PARTITIONS = 3;
/** Consumers that come and go in the group: rebalances on every seed. */
const GROUP_MEMBERS = 3;
const BROKER_PORT = 9092;
const CONTROLLER_PORT = 9093;

/** Fast timeouts, as the cluster tests use, so that failovers happen within seconds. */
/**
 * How long after its links heal a node may still answer as a deposed coordinator: its metadata
 * catches up within a broker session (broker.session.timeout.ms below), as the fault suite's
 * checker allows for a node that was cut off.
 */
const STALE_ANSWER_GRACE_MS = 3000;

function nodeProperties(node: SimNode, nodes: readonly SimNode[]): Map<string, string> {
  const voters = nodes.filter((n) => n.roles.includes('controller'));
  const brokers = nodes.filter((n) => n.roles.includes('broker')).length;
  const listeners: string[] = [];
  if (node.roles.includes('broker')) listeners.push(`PLAINTEXT://${node.host}:${BROKER_PORT}`);
  if (node.roles.includes('controller')) listeners.push(`CONTROLLER://${node.host}:${CONTROLLER_PORT}`);
  const props = new Map<string, string>([
    ['process.roles', node.roles],
    ['node.id', String(node.id)],
    ['controller.quorum.voters', voters.map((v) => `${v.id}@${v.host}:${CONTROLLER_PORT}`).join(',')],
    ['listeners', listeners.join(',')],
    ['controller.listener.names', 'CONTROLLER'],
    ['listener.security.protocol.map', 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT'],
    ['log.dirs', `/n${node.id}/logs`],
    ['default.replication.factor', String(Math.min(3, brokers))],
    ['min.insync.replicas', String(Math.min(2, brokers))],
    ['offsets.topic.replication.factor', String(Math.min(3, brokers))],
    ['offsets.topic.num.partitions', String(OFFSETS_PARTITIONS)],
    ['transaction.state.log.replication.factor', String(Math.min(3, brokers))],
    ['transaction.state.log.min.isr', String(Math.min(2, brokers))],
    ['group.initial.rebalance.delay.ms', '0'],
    ['controller.quorum.election.timeout.ms', '1000'],
    ['controller.quorum.fetch.timeout.ms', '2000'],
    ['controller.quorum.election.backoff.max.ms', '500'],
    ['controller.quorum.retry.backoff.ms', '50'],
    ['controller.quorum.request.timeout.ms', '2000'],
    ['broker.heartbeat.interval.ms', '500'],
    ['broker.session.timeout.ms', '3000'],
    ['replica.lag.time.max.ms', '3000'],
    ['replica.fetch.wait.max.ms', '200'],
    ['replica.fetch.backoff.ms', '100'],
    ['request.timeout.ms', '5000'],
  ]);
  if (node.roles.includes('broker')) {
    props.set('advertised.listeners', `PLAINTEXT://${node.host}:${BROKER_PORT}`);
    props.set('inter.broker.listener.name', 'PLAINTEXT');
  }
  return props;
}

/** A logger that writes into the trace only: warnings and errors, or from SIM_LOG_LEVEL up. */
function traceLogger(scheduler: Scheduler, who: string): Logger {
  return pino(
    { level: process.env.SIM_LOG_LEVEL ?? 'warn', base: null, timestamp: false },
    {
      write(line: string) {
        let text = line.trim();
        try {
          const o = JSON.parse(line) as { msg?: string; err?: { message?: string } };
          text = `${o.msg ?? ''}${o.err?.message !== undefined ? `: ${o.err.message}` : ''}`;
        } catch {
          // Not JSON: keep the line as it is.
        }
        scheduler.trace.add(scheduler.nowMs, who, `log: ${text.slice(0, 300)}`);
      },
    },
  );
}

export async function runClusterSim(options: ClusterSimOptions): Promise<SimResult> {
  const prng = new Prng(options.seed);
  const scheduler = new Scheduler(prng.fork(), Number(process.env.SIM_TRACE_EVENTS ?? 1000));
  const faults = prng.fork();
  const net = new SimNetwork(scheduler, prng.fork());
  const diskRandom = prng.fork();
  const nodeRandom = prng.fork();
  const clientRandom = prng.fork();
  const checker = new InvariantChecker(() => scheduler.nowMs);
  const durationMs = options.durationMs ?? 20_000;
  const maxSteps = options.maxSteps ?? 2_000_000;
  const unhandled = captureUnhandledRejections();
  const realBaseline = realResources();
  const counts = { kills: 0, powerFailures: 0, heldBack: 0, partitions: 0, resets: 0, jumps: 0, coordinatorFaults: 0 };

  const separateRoles = faults.chance(0.3);
  const powerFailures = options.powerFailures !== false;
  const roles: Roles[] = separateRoles
    ? ['controller', 'controller', 'controller', 'broker', 'broker']
    : ['broker,controller', 'broker,controller', 'broker,controller'];
  const nodes: SimNode[] = roles.map((r, i) => {
    const id = i + 1;
    const owner = new Owner(`n${id}`);
    owner.alive = false;
    // The disk is made before the node it belongs to (its root directory's mtime included).
    let self: SimNode | undefined;
    const node: SimNode = {
      id,
      roles: r,
      host: `10.0.0.${id}`,
      disk: new MemoryFileSystem({
        // Each I/O completes after a seeded latency, on the incarnation that issued it: a
        // crashed process never sees its last operations complete.
        defer: (complete) => {
          const latency = diskRandom.chance(0.02) ? diskRandom.float() * 20 : 0.02 + diskRandom.float() * 0.3;
          scheduler.schedule(self!.owner, 'disk', latency, 'io', complete);
        },
        now: () => self?.clock.now() ?? SIM_EPOCH_MS,
      }),
      incarnation: -1,
      owner,
      clock: new SimClock(scheduler, owner),
      broker: null,
      started: false,
    };
    self = node;
    return node;
  });
  const brokerNodes = nodes.filter((n) => n.roles.includes('broker'));
  const replicationFactor = Math.min(3, brokerNodes.length);
  const powerBound = new PowerLossBound();

  const start = (node: SimNode) => {
    node.incarnation++;
    const owner = new Owner(`n${node.id}`);
    node.owner = owner;
    node.clock = new SimClock(scheduler, owner, faults.range(-200, 200), faults.range(0, 10_000_000));
    node.started = false;
    const runtime: Runtime = {
      clock: node.clock,
      random: seededRandom(nodeRandom.fork()),
      network: net.endpoint(owner, node.host),
      fileSystem: node.disk,
    };
    const config = new BrokerConfig({ file: nodeProperties(node, nodes) });
    const broker = new Broker({ config, logger: traceLogger(scheduler, `n${node.id}`), runtime });
    node.broker = broker;
    scheduler.trace.add(scheduler.nowMs, 'nemesis', `start n${node.id} (incarnation ${node.incarnation})`);
    broker.start().then(
      () => {
        if (!owner.alive) return;
        node.started = true;
        scheduler.trace.add(scheduler.nowMs, `n${node.id}`, 'started');
      },
      (err: unknown) => {
        if (owner.alive)
          checker.violations.push({ invariant: 'nodes start', detail: `n${node.id}: ${describe(err)}`, atMs: scheduler.nowMs });
      },
    );
  };
  const crash = (node: SimNode, power: boolean) => {
    node.owner.alive = false;
    node.started = false;
    net.crashed(node.owner);
    if (power) node.disk.crash(() => diskRandom.float());
    if (node.roles.includes('broker')) powerBound.shutDownUncleanly(node.id, power);
    checker.brokerRestarted(node.id, node.incarnation);
    scheduler.trace.add(scheduler.nowMs, 'nemesis', `${power ? 'power failure of' : 'kill'} n${node.id}`);
  };
  for (const n of nodes) start(n);

  const check = () => {
    const live = nodes.filter((n) => n.owner.alive && n.broker !== null);
    checker.observeRaft(live.flatMap((n) => brokerRaftView(n.broker!, n.incarnation) ?? []));
    const replicas = live.flatMap((n) => brokerReplicaViews(n.broker!, n.incarnation));
    checker.observeReplicas(replicas);
    powerBound.observe(replicas);
  };
  const run = async (untilMs: number, stop: () => boolean = () => false): Promise<void> => {
    while ((checker.ok || options.keepGoing === true) && !stop() && scheduler.steps < maxSteps) {
      if (!(await scheduler.step(untilMs))) return;
      check();
      for (const f of scheduler.failures.splice(0)) {
        checker.violations.push({
          invariant: 'no uncaught exception',
          detail: `${f.owner}: ${f.label}: ${describe(f.error)}`,
          atMs: scheduler.nowMs,
        });
      }
      for (const reason of unhandled.take()) {
        checker.violations.push({ invariant: 'no unhandled rejection', detail: describe(reason), atMs: scheduler.nowMs });
      }
      if (scheduler.steps % 1000 === 0) {
        const leaked = realResourcesSince(realBaseline);
        if (leaked.length > 0) {
          checker.violations.push({
            invariant: 'no real I/O (everything through the seams)',
            detail: leaked.join(', '),
            atMs: scheduler.nowMs,
          });
        }
      }
    }
  };

  let active = true;
  let running = true;
  let clientIds = 0;
  const clientContext = (name: string): ClientContext => {
    const owner = new Owner(name);
    return {
      name,
      clock: new SimClock(scheduler, owner),
      network: net.endpoint(owner, `10.0.1.${++clientIds}`),
      prng: clientRandom.fork(),
      trace: scheduler.trace,
      bootstrap: brokerNodes.map((n) => `${n.host}:${BROKER_PORT}`),
      active: () => active,
      running: () => running,
    };
  };

  const stopped = () => {
    // The state the violation was seen in, after the events that led to it.
    for (const n of nodes) {
      if (!n.owner.alive || n.broker === null) {
        scheduler.trace.add(scheduler.nowMs, `n${n.id}`, 'state: down');
        continue;
      }
      const raft = brokerRaftView(n.broker, n.incarnation);
      if (raft !== undefined) {
        scheduler.trace.add(
          scheduler.nowMs,
          `n${n.id}`,
          `state: raft epoch ${raft.epoch}${raft.isLeader ? ' leader' : ''} hw ${raft.highWatermark} log ${raft.logStartOffset}..${raft.logEndOffset}`,
        );
      }
      for (const r of brokerReplicaViews(n.broker, n.incarnation)) {
        scheduler.trace.add(
          scheduler.nowMs,
          `n${n.id}`,
          `state: ${r.topic}-${r.partition} ${r.isLeader ? 'leader' : 'follower'} epoch ${r.leaderEpoch} hw ${r.highWatermark} log ${r.logStartOffset}..${r.logEndOffset} isr [${r.isr.join(',')}]`,
        );
      }
    }
    return resultOf(
      options.seed,
      scheduler,
      checker,
      `${separateRoles ? '3 controllers + 2 brokers' : '3 combined nodes'}; stopped at the first violation`,
    );
  };
  try {
    await run(30_000, () => nodes.every((n) => n.started));
    if (checker.ok && !nodes.every((n) => n.started)) {
      checker.violations.push({ invariant: 'liveness', detail: 'the cluster did not start within 30 s', atMs: scheduler.nowMs });
    }
    let created = false;
    void createTopic(clientContext('admin'), TOPIC, PARTITIONS, replicationFactor).then(() => {
      created = true;
    });
    await run(scheduler.nowMs + 20_000, () => created);
    if (checker.ok && !created)
      checker.violations.push({ invariant: 'liveness', detail: 'topic not created within 20 s', atMs: scheduler.nowMs });
    if (!checker.ok && options.keepGoing !== true) return stopped();

    const producers = [new SimProducer(clientContext('p1'), TOPIC, PARTITIONS), new SimProducer(clientContext('p2'), TOPIC, PARTITIONS)];
    const consumer = new SimConsumerGroup(
      Array.from({ length: GROUP_MEMBERS }, (_, i) => clientContext(`c${i + 1}`)),
      checker,
      TOPIC,
      PARTITIONS,
      GROUP,
    );
    const clientsDone = Promise.all([...producers.map((p) => p.run()), consumer.run()]);

    const offsetsPartition = coordinatorPartitionFor(GROUP, OFFSETS_PARTITIONS);
    /** The live node that leads the group's __consumer_offsets partition in the latest epoch. */
    const groupCoordinator = (): SimNode | undefined => {
      let leader: { node: SimNode; epoch: number } | undefined;
      for (const n of nodes) {
        if (!n.owner.alive || n.broker === null) continue;
        for (const r of brokerReplicaViews(n.broker, n.incarnation)) {
          if (r.topic !== OFFSETS_TOPIC || r.partition !== offsetsPartition || !r.isLeader) continue;
          if (leader === undefined || r.leaderEpoch > leader.epoch) leader = { node: n, epoch: r.leaderEpoch };
        }
      }
      return leader?.node;
    };

    // A node cut off from any peer may miss the metadata that moved its offsets partitions
    // away, and so answer as a deposed coordinator, until a session after it is healed. Both
    // ends of a cut link count: whichever of the two led the metadata quorum, the other could
    // not fetch from it while the third node kept a majority committing. An isolated node's
    // peers miss nothing: with the leader isolated, nothing commits until they elect another.
    const cutLinks = new Map<string, number>();
    const healedAtMs = new Map<string, number>();
    checker.mayAnswerStale = (host) =>
      (cutLinks.get(host) ?? 0) > 0 || scheduler.nowMs <= (healedAtMs.get(host) ?? Number.NEGATIVE_INFINITY) + STALE_ANSWER_GRACE_MS;

    // The nemesis: a fault every 0.3-2 s; at most one node down at a time.
    const nemesis = new Owner('nemesis');
    const endMs = scheduler.nowMs + durationMs;
    const fault = () => {
      if (scheduler.nowMs > endMs) return;
      // Every other fault or so strikes the group's coordinator, so that it moves on every seed.
      const coordinator = groupCoordinator();
      const node = (faults.chance(0.4) ? coordinator : undefined) ?? faults.pick(nodes);
      const down = nodes.filter((n) => !n.owner.alive).length;
      const picked = faults.pick(['kill', 'power', 'isolate', 'cut-link', 'reset', 'jump', 'none'] as const);
      const wanted = picked === 'power' && !powerFailures ? 'kill' : picked;
      const crashing = wanted === 'kill' || wanted === 'power';
      const heldBack = crashing && down === 0 && node.roles.includes('broker') && !powerBound.allows(node.id, wanted === 'power');
      if (heldBack) counts.heldBack++;
      // Within KIP-966's bound a power failure becomes a kill where a kill fits, else nothing.
      const kind = !heldBack ? wanted : wanted === 'power' && powerBound.allows(node.id, false) ? 'kill' : 'none';
      if (node === coordinator && (kind === 'isolate' || kind === 'cut-link' || ((kind === 'kill' || kind === 'power') && down === 0)))
        counts.coordinatorFaults++;
      if ((kind === 'kill' || kind === 'power') && down === 0) {
        if (kind === 'kill') counts.kills++;
        else counts.powerFailures++;
        crash(node, kind === 'power');
        scheduler.schedule(nemesis, 'fault', faults.range(300, 4000), `restart n${node.id}`, () => {
          // Healing may have restarted it already.
          if (!node.owner.alive) start(node);
        });
      } else if (kind === 'isolate' || kind === 'cut-link') {
        counts.partitions++;
        const others = [...nodes.filter((n) => n !== node).map((n) => n.host), ...(kind === 'isolate' ? clientHosts(clientIds) : [])];
        const cut = kind === 'isolate' ? others : [faults.pick(others)];
        for (const h of cut) net.cut(node.host, h);
        const cutOff = kind === 'isolate' ? [node.host] : [node.host, ...cut];
        for (const h of cutOff) cutLinks.set(h, (cutLinks.get(h) ?? 0) + 1);
        scheduler.trace.add(scheduler.nowMs, 'nemesis', `cut ${node.host} from ${cut.join(' ')}`);
        scheduler.schedule(nemesis, 'fault', faults.range(500, 6000), 'heal', () => {
          // Healing every link at the end of the run healed this one already.
          if (!active) return;
          for (const h of cut) net.heal(node.host, h);
          for (const h of cutOff) {
            cutLinks.set(h, (cutLinks.get(h) ?? 1) - 1);
            healedAtMs.set(h, scheduler.nowMs);
          }
          scheduler.trace.add(scheduler.nowMs, 'nemesis', `heal ${node.host}`);
        });
      } else if (kind === 'reset') {
        const open = net.openConnections();
        if (open.length > 0) {
          counts.resets++;
          const c = faults.pick(open);
          scheduler.trace.add(scheduler.nowMs, 'nemesis', `reset c${c.id}`);
          net.reset(c);
        }
      } else if (kind === 'jump' && node.owner.alive) {
        counts.jumps++;
        const delta = faults.range(-60_000, 60_000);
        node.clock.jump(delta);
        scheduler.trace.add(scheduler.nowMs, 'nemesis', `clock of n${node.id} jumps ${delta} ms`);
      }
      scheduler.schedule(nemesis, 'fault', faults.range(300, 2000), 'fault', fault);
    };
    scheduler.schedule(nemesis, 'fault', 1000, 'fault', fault);
    await run(endMs);
    if (!checker.ok && options.keepGoing !== true) return stopped();

    // Heal: no cut links, every node up; the clients finish their work in flight.
    active = false;
    net.healAll();
    for (const [h, n] of cutLinks) if (n > 0) healedAtMs.set(h, scheduler.nowMs);
    cutLinks.clear();
    for (const n of nodes) if (!n.owner.alive) start(n);
    scheduler.trace.add(scheduler.nowMs, 'nemesis', 'heal all');
    let clientsFinished = false;
    void clientsDone.then(() => {
      clientsFinished = true;
    });
    await run(scheduler.nowMs + 30_000, () => clientsFinished && nodes.every((n) => n.started));
    if (checker.ok && !nodes.every((n) => n.started)) {
      checker.violations.push({ invariant: 'liveness', detail: 'not every node up 30 s after healing', atMs: scheduler.nowMs });
    }

    if (checker.ok || options.keepGoing === true) {
      const reader = clientContext('reader');
      const logs = new Map<number, Map<number, string> | undefined>();
      let committed: Map<number, number> | Error | undefined;
      let read = false;
      void Promise.all([
        ...Array.from({ length: PARTITIONS }, async (_, p) => {
          const ackedEnd = Math.max(0, ...producers.flatMap((pr) => pr.acked.filter((a) => a.partition === p).map((a) => a.offset + 1)));
          logs.set(p, await readFinalLog(reader, TOPIC, p, ackedEnd));
        }),
        consumer.committedNow(reader).then(
          (c) => {
            committed = c;
          },
          (err: unknown) => {
            committed = err instanceof Error ? err : new Error(String(err));
          },
        ),
      ]).then(() => {
        read = true;
      });
      await run(scheduler.nowMs + 30_000, () => read);
      const acked = producers.flatMap((p) => p.acked);
      checker.checkAcked(acked, (_topic, p) => logs.get(p));
      for (const [p, seen] of consumer.records) {
        const log = logs.get(p);
        if (log === undefined) continue;
        for (const [offset, value] of seen) {
          if (log.get(offset) !== value) {
            checker.violations.push({
              invariant: 'consumed records stay in the log',
              detail: `${TOPIC}-${p} offset ${offset}: consumed ${value}, final log holds ${log.get(offset) ?? 'nothing'}`,
              atMs: scheduler.nowMs,
            });
          }
        }
      }
      for (const problem of consumer.problems)
        checker.violations.push({ invariant: 'consumer view', detail: problem, atMs: scheduler.nowMs });
      if (!(committed instanceof Map)) {
        checker.violations.push({
          invariant: 'committed offsets kept',
          detail: `OffsetFetch after healing: ${committed?.message ?? 'no answer'}`,
          atMs: scheduler.nowMs,
        });
      }
      const consumed = [...consumer.records.values()].reduce((a, m) => a + m.size, 0);
      const inDoubt = producers.reduce((a, p) => a + p.inDoubt, 0);
      const group = checker.groupActivity;
      const summary =
        `${separateRoles ? '3 controllers + 2 brokers' : '3 combined nodes'}, ${powerFailures ? 'power failures' : 'kills only'}; kills ${counts.kills}, power failures ${counts.powerFailures} (${counts.heldBack} crashes held back to KIP-966's bound), ` +
        `partitions ${counts.partitions}, resets ${counts.resets} (connections reset in all ${net.stats.resets} of ${net.stats.connects}), ` +
        `clock jumps ${counts.jumps}; acked ${acked.length}, in doubt ${inDoubt}, consumed ${consumed}; ` +
        `group generations ${group.generations}, coordinator faults ${counts.coordinatorFaults}, commits acked ${group.commitsAcked}, offset fetches ${group.offsetFetches} ` +
        `(${checker.staleOffsetFetches} read an older commit from a node cut off lately)`;
      return resultOf(options.seed, scheduler, checker, summary);
    }
    return stopped();
  } finally {
    running = false;
    for (const n of nodes) n.owner.alive = false;
    unhandled.stop();
  }
}

function clientHosts(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `10.0.1.${i + 1}`);
}

function resultOf(seed: number, scheduler: Scheduler, checker: InvariantChecker, summary: string): SimResult {
  return {
    seed,
    level: 'cluster',
    hash: scheduler.trace.digest(),
    steps: scheduler.steps,
    virtualMs: scheduler.nowMs,
    violations: checker.violations,
    trace: scheduler.trace.format(),
    summary,
  };
}
