import assert from 'node:assert/strict';
import { runClusterCommand } from '../../../src/cli/cluster.ts';
import type { ClusterDescription } from '../../../src/client/admin.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';

function cluster(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runClusterCommand(['cluster', ...argv], io));
}

describe('sluice cluster describe --bootstrap-server: usage', () => {
  it('answers usage errors with exit code 2', async () => {
    for (const argv of [
      ['describe', '--bootstrap-server', '127.0.0.1:9092', '--bootstrap-controller', '127.0.0.1:9093'],
      ['add-controller', '--bootstrap-server', '127.0.0.1:9092'],
      ['describe', '--bootstrap-server', 'no-port'],
      ['describe', '--bootstrap-server', '127.0.0.1:9092', '--output', 'yaml'],
      ['describe', '--bootstrap-controller', '127.0.0.1:9093', '--output', 'json'],
    ]) {
      const r = await cluster(...argv);
      assert.equal(r.code, 2, `cluster ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
  });

  it('exits 1 naming the address when no broker answers', async () => {
    const r = await cluster('describe', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});

againstEachBroker('sluice cluster describe --bootstrap-server', (bootstrap) => {
  it('shows the cluster id, the one broker, the active controller and the quorum leader', async () => {
    const json = await cluster('describe', '--bootstrap-server', bootstrap(), '--output', 'json');
    assert.equal(json.code, 0, json.stderr);
    const d = JSON.parse(json.stdout) as ClusterDescription;
    assert.equal(d.brokers.length, 1);
    const [broker] = d.brokers;
    assert.equal(`${broker!.host}:${broker!.port}`, bootstrap());
    assert.ok(d.clusterId !== null && d.clusterId.length > 0);
    assert.ok(d.quorum !== null, 'DescribeQuorum answered');
    assert.ok(d.quorum.leaderId >= 0);
    assert.ok(d.quorum.leaderEpoch > 0);
    assert.ok(d.quorum.highWatermark > 0);
    assert.ok(
      d.quorum.voters.some((v) => v.nodeId === d.quorum!.leaderId),
      JSON.stringify(d.quorum),
    );

    const text = await cluster('describe', '--bootstrap-server', bootstrap());
    assert.equal(text.code, 0, text.stderr);
    const leader = d.quorum.leaderId;
    assert.match(text.stdout, new RegExp(`^ClusterId: +${d.clusterId}\\n`));
    assert.match(text.stdout, new RegExp(`^Brokers: +${broker!.nodeId}@${bootstrap()}$`, 'm'));
    assert.match(text.stdout, new RegExp(`^LeaderId: +${leader}$`, 'm'));
    assert.match(text.stdout, /^NODE-ID +LOG-END-OFFSET +LAG +LAST-CAUGHT-UP-AGO-MS +STATUS$/m);
    assert.match(text.stdout, new RegExp(`^${leader} +\\d+ +0 +\\d+ +Leader$`, 'm'));
  });
});
