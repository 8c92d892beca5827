import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BrokerConfig, parseProperties } from '../../../src/config/index.ts';
import { devArgs, UsageError } from '../../../src/cli/args.ts';
import { clusterNodeProperties, planDevCluster, propertiesText } from '../../../src/cli/dev-cluster.ts';

const REPO = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

describe('sluice dev --nodes', () => {
  it('places N combined nodes on consecutive broker ports with controller ports 10000 above', () => {
    const nodes = planDevCluster(devArgs(['--nodes', '3', '--data-dir', '/tmp/c']));
    assert.deepEqual(
      nodes.map((n) => [n.nodeId, n.host, n.port, n.controllerPort, n.logDir]),
      [
        [1, '127.0.0.1', 9092, 19092, '/tmp/c/node-1/logs'],
        [2, '127.0.0.1', 9093, 19093, '/tmp/c/node-2/logs'],
        [3, '127.0.0.1', 9094, 19094, '/tmp/c/node-3/logs'],
      ],
    );
    const free = planDevCluster(devArgs(['--nodes', '2', '--port', '0', '--host', '0.0.0.0']), [5001, 5002, 5003, 5004]);
    assert.deepEqual(
      free.map((n) => [n.host, n.advertisedHost, n.port, n.controllerPort]),
      [
        ['0.0.0.0', '127.0.0.1', 5001, 5003],
        ['0.0.0.0', '127.0.0.1', 5002, 5004],
      ],
    );
    assert.throws(() => planDevCluster(devArgs(['--nodes', '3', '--port', '60000'])), UsageError);
    assert.throws(() => devArgs(['--nodes', '0']), /invalid --nodes 0/);
    assert.equal(devArgs([]).nodes, 1);
  });

  it('writes properties every node accepts, with replication settings from the node count', () => {
    const nodes = planDevCluster(devArgs(['--nodes', '3', '--data-dir', '/tmp/c']));
    for (const node of nodes) {
      const text = propertiesText(clusterNodeProperties(node, nodes), 'a comment');
      const config = new BrokerConfig({ file: parseProperties(text) });
      assert.equal(config.nodeId, node.nodeId);
      assert.deepEqual(
        config.quorumVoters.map((v) => [v.nodeId, v.port]),
        [
          [1, 19092],
          [2, 19093],
          [3, 19094],
        ],
      );
      assert.deepEqual(
        config.listeners.map((l) => [l.name, l.port]),
        [
          ['PLAINTEXT', node.port],
          ['CONTROLLER', node.controllerPort],
        ],
      );
      assert.deepEqual(
        config.advertisedListeners.map((l) => l.name),
        ['PLAINTEXT'],
      );
      assert.equal(config.getInt('default.replication.factor'), 3);
      assert.equal(config.getInt('min.insync.replicas'), 2);
      assert.equal(config.getInt('offsets.topic.replication.factor'), 3);
      assert.equal(config.getInt('transaction.state.log.replication.factor'), 3);
      assert.equal(config.getInt('transaction.state.log.min.isr'), 2);
    }
    const two = planDevCluster(devArgs(['--nodes', '2']));
    const props = clusterNodeProperties(two[0]!, two);
    assert.equal(props.get('default.replication.factor'), '2');
    assert.equal(props.get('min.insync.replicas'), '2');
  });

  it('ships scripts/cluster/node-N.properties that are the same cluster on fixed loopback ports', async () => {
    const nodes = planDevCluster(devArgs(['--nodes', '3', '--data-dir', './data']));
    for (const node of nodes) {
      const file = parseProperties(await readFile(join(REPO, 'scripts', 'cluster', `node-${node.nodeId}.properties`), 'utf8'));
      const config = new BrokerConfig({ file });
      const expected = clusterNodeProperties(
        { ...node, logDir: `./data/node-${node.nodeId}` },
        nodes.map((n) => ({ ...n, logDir: '' })),
      );
      for (const [key, value] of expected) assert.equal(file.get(key), value, `${key} of node ${node.nodeId}`);
      assert.deepEqual(config.unknownNames, []);
    }
  });
});
