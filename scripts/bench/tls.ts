// What TLS costs: the produce and fetch loads of broker.ts over a node's PLAINTEXT listener (the
// ceiling) and over its SSL listener (mTLS: a client certificate, as ssl.client.auth=required),
// on a Sluice node and an Apache Kafka node started from the same properties
// (test/helpers/secured-brokers.ts), in alternating rounds. Prints, for each broker, TLS /
// PLAINTEXT throughput, then Sluice over TLS against Kafka over TLS, then the absolute figures
// with their spread over the rounds.
// Run: node --import tsx scripts/bench/tls.ts [--quick]
import { readFileSync } from 'node:fs';
import { KafkaCluster } from '../../src/client/cluster.ts';
import type { ConnectionOptions } from '../../src/client/connection.ts';
import { startSecuredKafka, startSecuredSluice, type SecuredBroker } from '../../test/helpers/secured-brokers.ts';
import { kafkaInstalled } from '../../compat/targets.ts';
import { PRODUCE_PARTITIONS, createTopics, fetchLoad, produceLoad } from './broker.ts';
import { median, settlePageCache, spread } from './measure.ts';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 3;

type Transport = 'PLAINTEXT' | 'SSL';

interface Figures {
  produce: Record<Transport, number[]>;
  fetch: Record<Transport, number[]>;
}

async function clientTls(broker: SecuredBroker): Promise<ConnectionOptions> {
  const cert = await broker.pki.client('bench');
  return { tls: { ca: [readFileSync(broker.pki.caCert)], key: readFileSync(cert.key), cert: readFileSync(cert.cert) } };
}

/** One round on a fresh node: produce over one listener, then read it all back over the same listener (the first pass warms). */
async function round(start: () => Promise<SecuredBroker>, transport: Transport, figures: Figures): Promise<void> {
  const broker = await start();
  const options = transport === 'SSL' ? await clientTls(broker) : {};
  const [host, port] = broker.endpoints[transport].split(':');
  const cluster = new KafkaCluster([broker.endpoints[transport]], options);
  try {
    await createTopics(cluster, ['bench'], PRODUCE_PARTITIONS);
    settlePageCache();
    const produced = await produceLoad(host!, Number(port), PRODUCE_PARTITIONS, options);
    if (produced.errors > 0) throw new Error(`${produced.errors} produce errors over ${transport}`);
    figures.produce[transport].push(produced.mibPerS);
    await fetchLoad(cluster, PRODUCE_PARTITIONS, null, options);
    figures.fetch[transport].push((await fetchLoad(cluster, PRODUCE_PARTITIONS, null, options)).mibPerS);
  } finally {
    await cluster.close();
    await broker.stop();
  }
}

async function measure(name: string, start: () => Promise<SecuredBroker>): Promise<Figures> {
  const figures: Figures = { produce: { PLAINTEXT: [], SSL: [] }, fetch: { PLAINTEXT: [], SSL: [] } };
  for (let r = 0; r < ROUNDS; r++) {
    for (const transport of r % 2 === 0 ? (['PLAINTEXT', 'SSL'] as const) : (['SSL', 'PLAINTEXT'] as const)) {
      process.stderr.write(`  ${name} round ${r + 1}/${ROUNDS}: ${transport}\n`);
      await round(start, transport, figures);
    }
  }
  return figures;
}

function report(name: string, f: Figures): string[] {
  const ratio = (xs: number[], ys: number[]) => (median(xs) / median(ys)).toFixed(3);
  return [
    `${name.padEnd(7)} produce TLS / PLAINTEXT ${ratio(f.produce.SSL, f.produce.PLAINTEXT)}   MiB/s: TLS ${spread(f.produce.SSL, 0)}; PLAINTEXT ${spread(f.produce.PLAINTEXT, 0)}`,
    `${name.padEnd(7)} fetch   TLS / PLAINTEXT ${ratio(f.fetch.SSL, f.fetch.PLAINTEXT)}   MiB/s: TLS ${spread(f.fetch.SSL, 0)}; PLAINTEXT ${spread(f.fetch.PLAINTEXT, 0)}`,
  ];
}

async function main(): Promise<void> {
  const sluice = await measure('Sluice', startSecuredSluice);
  const lines = [`TLS against PLAINTEXT (medians of ${ROUNDS} rounds, a fresh node each)`, ...report('Sluice', sluice)];
  if (kafkaInstalled()) {
    const kafka = await measure('Kafka', startSecuredKafka);
    lines.push(...report('Kafka', kafka));
    lines.push(
      `Sluice / Kafka over TLS: produce ${(median(sluice.produce.SSL) / median(kafka.produce.SSL)).toFixed(3)}, fetch ${(median(sluice.fetch.SSL) / median(kafka.fetch.SSL)).toFixed(3)}`,
    );
  } else {
    lines.push('Kafka: not installed (bash scripts/install-test-clients.sh), no comparison');
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
