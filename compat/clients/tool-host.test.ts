import assert from 'node:assert/strict';
import { missingTool } from '../../test/helpers/runtimes.ts';
import { kafkaVersion } from '../targets.ts';
import { JVM_OPTIONS, javaClasspath, javaUnavailable } from './java.ts';
import { ResidentProcess } from './resident-process.ts';

// Kafka's tools in one long-lived JVM (compat/java/ToolHost.java), each command answered with
// the exit status and output its own JVM would have had. Nothing listens on port 1: these
// commands end before they would connect.

interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

describe('compat: Kafka tools in one JVM (ToolHost)', function () {
  this.timeout(120_000);
  let host: ResidentProcess;

  before(async function () {
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `the Java client (${why})`, 'scripts/install-test-clients.sh');
    const classpath = await javaClasspath('ToolHost');
    host = new ResidentProcess('tools', async () => ['java', [...JVM_OPTIONS, '-cp', classpath, 'ToolHost']]);
  });

  after(async function () {
    await host?.close();
  });

  function tool(mainClass: string, args: string[]): Promise<ToolResult> {
    return host.call(mainClass, { args }, 60_000) as Promise<ToolResult>;
  }

  it('stops a tool where it exits, with its status and only its own output', async function () {
    // kafka-topics --version prints the version and exits 0 inside a catch-all that would
    // otherwise report the exit as an error.
    const result = await tool('org.apache.kafka.tools.TopicCommand', ['--version']);
    assert.deepEqual(result, { code: 0, stdout: `${kafkaVersion()}\n`, stderr: '' });
  });

  it("gives each command its own streams and status, Scala's tools included", async function () {
    const rejected = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', '127.0.0.1:1', '--frobnicate']);
    assert.equal(rejected.code, 1);
    assert.equal(rejected.stdout, '');
    assert.match(rejected.stderr, /^frobnicate is not a recognized option\n/);
    const configs = await tool('kafka.admin.ConfigCommand', ['--bootstrap-server', '127.0.0.1:1', '--describe']);
    assert.deepEqual(configs, { code: 1, stdout: '', stderr: 'At least one entity type must be specified\n' });
  });

  it('answers a main class that is not there with status 1, as java would exit', async function () {
    const result = await tool('org.apache.kafka.tools.NoSuchCommand', []);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /Could not find or load main class org\.apache\.kafka\.tools\.NoSuchCommand/);
  });
});
