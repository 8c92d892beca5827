import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, Page } from 'playwright-core';
import { runApplyCommand } from '../../../src/cli/apply.ts';
import { runCaptured } from '../../helpers/cli-targets.ts';
import { consumeRecords } from '../../helpers/consume-records.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { REPO } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';

/** Debian's Chromium (scripts/install-test-clients.sh installs it). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the screenshots go, for people to look at (not compared). */
const SCREENSHOTS = join(REPO, '.cache', 'console');
/** This machine's network is closed: Chromium's own background connections would only fail. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('web console in headless Chromium (real broker, kafkajs traffic)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  let browser: Browser;
  let page: Page;
  const requested: string[] = [];
  const pageErrors: string[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      if (process.env.CI === 'true') throw new Error(`Chromium is not installed at ${CHROMIUM} (scripts/install-test-clients.sh)`);
      console.error(`*** SKIP: web console tests: no Chromium at ${CHROMIUM} (apt-get install chromium) ***`);
      this.skip();
    }
    broker = await spawnBroker({ overrides: { 'metrics.lag.sample.interval.ms': 1000 } });
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'payments', numPartitions: 3 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    const send = (n: number, from: number) =>
      producer.send({
        topic: 'payments',
        messages: Array.from({ length: n }, (_, i) => ({
          key: `customer-${(from + i) % 7}`,
          value: JSON.stringify({ id: from + i, amount: (from + i) * 10 }),
          headers: { origin: 'checkout' },
        })),
      });
    await send(30, 0);
    // A group that read everything, then stopped while 30 more records arrived: it lags.
    const consumer = await consumeRecords(kafka, 'billing', 'payments', 30);
    await consumer.disconnect();
    await send(30, 30);
    await producer.disconnect();

    await mkdir(SCREENSHOTS, { recursive: true });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (r) => requested.push(r.url()));
    page.on('pageerror', (err) => pageErrors.push(err.message));
  });

  after(async () => {
    await browser?.close();
    await broker?.cleanup();
  });

  /** Opens a view and waits until the console rendered it. */
  async function open(hash: string): Promise<void> {
    await page.goto(`${broker.httpUrl}/${hash}`);
    // A hash-only navigation keeps the document: the view is the new one once it names the hash.
    await page.waitForFunction((shown) => document.body.dataset.ready === 'true' && document.body.dataset.view === shown, hash);
  }

  it('shows the cluster: its broker, the quorum and the throughput charts', async () => {
    await open('#/');
    assert.equal(await page.locator('#brokers tbody tr').count(), 1);
    assert.equal(await page.locator('#brokers tbody td').first().textContent(), '1');
    assert.match((await page.locator('main').textContent()) ?? '', /Metadata quorum: leader 1/);
    // The throughput charts fill in as the page polls.
    await page.waitForFunction(() => document.querySelector('figure[data-chart="Bytes in per second"] polyline') !== null, undefined, {
      timeout: 10_000,
    });
    await page.screenshot({ path: join(SCREENSHOTS, 'overview.png'), fullPage: true });
  });

  it('lists topics, shows a partition table and browses records as JSON', async () => {
    await open('#/topics');
    await page.getByRole('link', { name: 'payments' }).click();
    await page.waitForSelector('#partitions');
    assert.equal(await page.locator('#partitions tbody tr').count(), 3);
    const logEnds = await page.locator('#partitions tbody tr td:nth-child(6)').allTextContents();
    assert.equal(
      logEnds.reduce((n, t) => n + Number(t), 0),
      60,
    );
    await page.locator('form', { hasText: 'Browse records' }).locator('select[name="format"]').selectOption('json');
    await page.getByRole('button', { name: 'Browse' }).click();
    await page.waitForSelector('#record-table');
    const first = (await page.locator('#record-table tbody tr').first().textContent()) ?? '';
    assert.match(first, /"amount":/);
    assert.match(first, /origin=checkout/);
    await page.screenshot({ path: join(SCREENSHOTS, 'topic.png'), fullPage: true });
  });

  it('produces a record and creates a topic from the forms', async () => {
    await open('#/topics/payments');
    const produce = page.locator('form', { hasText: 'Produce a record' });
    await produce.locator('input[name="key"]').fill('from-the-console');
    await produce.locator('input[name="value"]').fill('typed in a browser');
    await produce.locator('select[name="partition"]').selectOption('2');
    await produce.getByRole('button', { name: 'Produce' }).click();
    await produce.locator('.status', { hasText: 'done' }).waitFor();
    const browse = page.locator('form', { hasText: 'Browse records' });
    await browse.locator('select[name="partition"]').selectOption('2');
    await browse.getByRole('button', { name: 'Browse' }).click();
    await page.locator('#record-table', { hasText: 'typed in a browser' }).waitFor();

    await open('#/topics');
    const create = page.locator('form', { hasText: 'Create a topic' });
    await create.locator('input[name="name"]').fill('created-in-browser');
    await create.locator('input[name="partitions"]').fill('2');
    await create.getByRole('button', { name: 'Create' }).click();
    await page.waitForFunction(() => location.hash === '#/topics/created-in-browser');
    await page.waitForSelector('#partitions');
    assert.equal(await page.locator('#partitions tbody tr').count(), 2);
  });

  it('shows a lagging group: lag per partition and its lag over time', async () => {
    // The group list is the coordinator's answer at the time the page loads: a coordinator still
    // settling the group after its consumer left may not list it yet, so the page is loaded again.
    await eventually('the billing group listed', async () => {
      await open('#/groups');
      return (await page.locator('#groups tbody tr', { hasText: 'billing' }).count()) > 0;
    });
    assert.deepEqual(await page.locator('#groups tbody tr').first().locator('td').allTextContents(), ['billing', 'Empty', '0']);
    await page.getByRole('link', { name: 'billing' }).click();
    await page.waitForSelector('#lag');
    // 30 records arrived after the group stopped, and one more from the console's produce form.
    assert.match((await page.locator('#group-summary').textContent()) ?? '', /lag 31 record\(s\)/);
    assert.equal(await page.locator('#lag tbody tr').count(), 3);
    // The view refreshes itself; the lag plot has points once the broker sampled twice.
    await page.waitForFunction(
      () => {
        const line = document.querySelector('figure[data-chart="Lag in records"] polyline');
        return line !== null && (line.getAttribute('points') ?? '').split(' ').length >= 2;
      },
      undefined,
      { timeout: 20_000 },
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'group.png'), fullPage: true });
  });

  it('shows on a topic page the schemas and delivery contract sluice apply stored', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-console-'));
    try {
      await writeFile(
        join(dir, 'policy.yaml'),
        'topic_policy: {name: order.events, partitions: 1, key_schema: order_id, value_schema: order_event_v2, delivery_contract: at_least_once}\n',
      );
      const applied = await runCaptured((io) =>
        runApplyCommand(['-f', join(dir, 'policy.yaml'), '--bootstrap-server', broker.bootstrap], io),
      );
      assert.equal(applied.code, 0, applied.stderr);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await open('#/topics/order.events');
    assert.deepEqual(await page.locator('#policy tbody td').allTextContents(), ['order_id', 'order_event_v2', 'at_least_once']);
    await open('#/topics/payments');
    assert.equal(await page.locator('#policy').count(), 0);
  });

  it('shows why a view whose address does not decode failed, and renders the next one', async () => {
    await open('#/topics/%E0');
    assert.match((await page.locator('main p.error[role="alert"]').textContent()) ?? '', /URI/);
    await open('#/topics');
    await page.getByRole('link', { name: 'payments' }).waitFor();
  });

  it('loads nothing from anywhere but the broker, and throws no script errors', () => {
    assert.ok(requested.length > 0);
    assert.deepEqual(
      requested.filter((url) => !url.startsWith(broker.httpUrl!)),
      [],
    );
    assert.deepEqual(pageErrors, []);
  });
});
