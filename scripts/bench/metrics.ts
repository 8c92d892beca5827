// What metrics cost: the produce and fetch loads of broker.ts against a Sluice node with its
// HTTP listener (metrics counted, and /metrics scraped every second, far more often than
// Prometheus's default 15 s) and against one without (--http-port=-1: nothing counted). The one
// without is the ceiling; the figure is metrics-on / metrics-off (target >= 0.97). Each round
// starts a fresh node of each kind in turn (the order flipped each round), so that neither
// reads a longer log or shares the machine with an idle twin; the medians count. The nodes keep
// their logs in memory (/dev/shm, where there is one): on disk, how fast the kernel takes a
// round's writes varies more between rounds than metrics cost (half of the broker's CPU under
// the produce load is page-cache writing), and this bench measures the broker's own work.
// Run: node --import tsx scripts/bench/metrics.ts [--quick]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { REPO, sluiceCommand } from '../../test/helpers/sluice-cli.ts';
import {
  PRODUCE_PARTITIONS,
  type Throughput,
  createTopics,
  fetchLoad,
  firstAcknowledgedProduce,
  produceLoad,
  stopChild,
  waitForLine,
} from './broker.ts';
import { cpuSeconds, median, settlePageCache, spread } from './measure.ts';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 3 : 5;
const SCRAPE_INTERVAL_MS = 1000;
const SHM = '/dev/shm';

interface Node {
  host: string;
  port: number;
  pid: number;
  scrapes: number;
  stop(): Promise<void>;
}

async function startNode(withMetrics: boolean): Promise<Node> {
  const dataDir = await mkdtemp(join(existsSync(SHM) ? SHM : tmpdir(), 'sluice-metrics-bench-'));
  const cmd = sluiceCommand([
    'dev',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    `--http-port=${withMetrics ? 0 : -1}`,
    '--data-dir',
    dataDir,
    '--override',
    'log.level=warn',
  ]);
  const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const m = await waitForLine(child, /listening on [A-Z_]+:\/\/([^:,\s]+):(\d+).*$/m, 60_000);
  const host = m[1]!;
  const port = Number(m[2]);
  const http = /, http on (http:\/\/\S+)/.exec(m[0])?.[1];
  await firstAcknowledgedProduce(host, port, Date.now() + 60_000);
  const node: Node = {
    host,
    port,
    pid: child.pid!,
    scrapes: 0,
    async stop() {
      clearInterval(scraper);
      await stopChild(child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  if (withMetrics && http === undefined) throw new Error(`no http listener in ${m[0]}`);
  const scraper = setInterval(() => {
    if (http === undefined) return;
    fetch(`${http}/metrics`)
      .then((r) => r.text())
      .then(
        () => node.scrapes++,
        () => undefined,
      );
  }, SCRAPE_INTERVAL_MS);
  return node;
}

interface Figures {
  produce: number[];
  fetch: number[];
  produceCpuPerGiB: number[];
}

/** One round on a fresh node: produce (CPU counted), then the fetch of what it wrote, read twice (the first pass warms). */
async function round(withMetrics: boolean, figures: Figures): Promise<number> {
  const node = await startNode(withMetrics);
  const cluster = new KafkaCluster([`${node.host}:${node.port}`]);
  try {
    await createTopics(cluster, ['bench'], PRODUCE_PARTITIONS);
    settlePageCache();
    const cpu0 = cpuSeconds(node.pid);
    const produced: Throughput = await produceLoad(node.host, node.port, PRODUCE_PARTITIONS);
    figures.produceCpuPerGiB.push((cpuSeconds(node.pid) - cpu0) / (produced.bytes / 1024 ** 3));
    figures.produce.push(produced.mibPerS);
    await fetchLoad(cluster, PRODUCE_PARTITIONS, null);
    figures.fetch.push((await fetchLoad(cluster, PRODUCE_PARTITIONS, null)).mibPerS);
    return node.scrapes;
  } finally {
    await cluster.close();
    await node.stop();
  }
}

async function main(): Promise<void> {
  const on: Figures = { produce: [], fetch: [], produceCpuPerGiB: [] };
  const off: Figures = { produce: [], fetch: [], produceCpuPerGiB: [] };
  let scrapes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const withMetrics of r % 2 === 0 ? [false, true] : [true, false]) {
      process.stderr.write(`  round ${r + 1}/${ROUNDS}: metrics ${withMetrics ? 'on' : 'off'}\n`);
      scrapes += await round(withMetrics, withMetrics ? on : off);
    }
  }
  const line = (label: string, xs: number[], ys: number[], unit: string) =>
    `${label.padEnd(9)} ${(median(xs) / median(ys)).toFixed(3)}   ${unit}: on ${spread(xs, 0)}; off ${spread(ys, 0)}`;
  process.stdout.write(
    [
      `metrics on / metrics off (medians of ${ROUNDS} rounds, a fresh node each; ${scrapes} scrapes of /metrics)`,
      line('produce', on.produce, off.produce, 'MiB/s'),
      line('fetch', on.fetch, off.fetch, 'MiB/s'),
      `${'cpu/GiB'.padEnd(9)} ${(median(on.produceCpuPerGiB) / median(off.produceCpuPerGiB)).toFixed(3)}   broker CPU seconds per GiB produced: on ${spread(on.produceCpuPerGiB, 2)}; off ${spread(off.produceCpuPerGiB, 2)}`,
    ].join('\n') + '\n',
  );
}

await main();
