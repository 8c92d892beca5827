/**
 * The web console: one page served by the node's HTTP listener, talking to its admin API
 * (/api/v1). No framework and nothing fetched from elsewhere, so it works offline. Views by
 * location hash: #/ (cluster and throughput), #/topics, #/topics/NAME (partitions, the policy
 * `sluice apply` stored, configs, record browser, produce form), #/groups, #/groups/ID (lag per partition, lag over time).
 */

interface Broker {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

interface QuorumReplica {
  nodeId: number;
  logEndOffset: number;
  lastCaughtUpTimestampMs: number;
}

interface Cluster {
  clusterId: string | null;
  controllerId: number;
  brokers: Broker[];
  quorum: { leaderId: number; leaderEpoch: number; highWatermark: number; voters: QuorumReplica[]; observers: QuorumReplica[] } | null;
}

interface TopicListing {
  name: string;
  partitionCount: number;
  internal: boolean;
}

interface PartitionDescription {
  partition: number;
  leader: number | null;
  replicas: number[];
  isr: number[];
  logStartOffset: number | null;
  logEndOffset: number | null;
}

/** What `sluice apply` stored for a topic: the fields Kafka has no topic config for. */
interface TopicPolicy {
  key_schema?: string;
  value_schema?: string;
  delivery_contract?: string;
}

interface TopicDescription {
  name: string;
  partitionCount: number;
  replicationFactor: number;
  configs: Record<string, string | null>;
  partitions: PartitionDescription[];
  policy: TopicPolicy | null;
}

interface GroupListing {
  groupId: string;
  state: string;
  protocolType: string;
  members: number;
}

interface PartitionLag {
  topic: string;
  partition: number;
  committedOffset: number;
  logEndOffset: number;
  lag: number | null;
  lagMs: number | null;
  memberId: string | null;
  clientId: string | null;
}

interface GroupDescription {
  groupId: string;
  state: string;
  protocol: string;
  members: { memberId: string; clientId: string; host: string; assignment: { topic: string; partition: number }[] }[];
  partitions: PartitionLag[];
}

interface LagSample {
  atMs: number;
  partitions: { topic: string; partition: number; lag: number; lagMs: number }[];
}

interface ShownRecord {
  offset: number;
  timestamp: number;
  key: unknown;
  value: unknown;
  headers: { key: string; value: unknown }[];
}

interface Browse {
  logStartOffset: number;
  highWatermark: number;
  nextOffset: number;
  records: ShownRecord[];
}

interface TrafficTotals {
  topic: string;
  messagesIn: number;
  bytesIn: number;
  bytesOut: number;
}

class ApiError extends Error {}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new ApiError(json.error ?? `${method} ${path}: ${res.status}`);
  return json;
}

type Child = Node | string | number | null | undefined | false;

/** A DOM element: `el('td', { class: 'num' }, 12)`. Text is always set as text, never as HTML. */
function el(tag: string, attrs: Record<string, string | ((e: Event) => void)> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') e.addEventListener(k, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === 'object' ? c : String(c));
  }
  return e;
}

function table(header: string[], rows: Child[][], attrs: Record<string, string> = {}): HTMLElement {
  return el(
    'table',
    attrs,
    el('thead', {}, el('tr', {}, ...header.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', typeof c === 'number' ? { class: 'num' } : {}, c))))),
  );
}

function link(href: string, text: string): HTMLElement {
  return el('a', { href }, text);
}

function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function shownValue(v: unknown): string {
  if (v === null) return '∅';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

interface Series {
  name: string;
  points: [number, number][];
}

const SERIES_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

/** A line chart of series over time, as SVG, with the y axis labelled by `format`. */
function lineChart(series: Series[], format: (n: number) => string, label: string): HTMLElement {
  const width = 640;
  const height = 200;
  const pad = { left: 64, right: 12, top: 12, bottom: 24 };
  const all = series.flatMap((s) => s.points);
  const wrapper = el('figure', { class: 'chart', 'data-chart': label });
  if (all.length === 0) {
    wrapper.append(el('figcaption', {}, `${label}: no data yet`));
    return wrapper;
  }
  const xs = all.map((p) => p[0]);
  const minX = Math.min(...xs);
  const maxX = Math.max(minX + 1, ...xs);
  const maxY = Math.max(1, ...all.map((p) => p[1]));
  const x = (v: number) => pad.left + ((v - minX) / (maxX - minX)) * (width - pad.left - pad.right);
  const y = (v: number) => height - pad.bottom - (v / maxY) * (height - pad.top - pad.bottom);
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const add = (tag: string, attrs: Record<string, string>, text?: string) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  for (const frac of [0, 0.5, 1]) {
    const v = maxY * frac;
    add('line', { x1: String(pad.left), x2: String(width - pad.right), y1: String(y(v)), y2: String(y(v)), class: 'grid' });
    add('text', { x: String(pad.left - 6), y: String(y(v) + 4), 'text-anchor': 'end', class: 'axis' }, format(v));
  }
  add('text', { x: String(pad.left), y: String(height - 6), class: 'axis' }, new Date(minX).toLocaleTimeString());
  add(
    'text',
    { x: String(width - pad.right), y: String(height - 6), 'text-anchor': 'end', class: 'axis' },
    new Date(maxX).toLocaleTimeString(),
  );
  series.forEach((s, i) => {
    const color = SERIES_COLORS[i % SERIES_COLORS.length]!;
    const points = s.points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(' ');
    add('polyline', { points, fill: 'none', stroke: color, 'stroke-width': '2', 'data-series': s.name });
  });
  wrapper.append(
    svg,
    el(
      'figcaption',
      {},
      `${label}: `,
      ...series.map((s, i) => el('span', { class: 'legend', style: `color: ${SERIES_COLORS[i % SERIES_COLORS.length]}` }, `■ ${s.name} `)),
    ),
  );
  return wrapper;
}

/** Per-topic rates between successive polls of /api/v1/traffic, kept while the page is open. */
class ThroughputHistory {
  private last: { atMs: number; topics: Map<string, TrafficTotals> } | null = null;
  readonly bytesIn = new Map<string, [number, number][]>();
  readonly bytesOut = new Map<string, [number, number][]>();
  private static readonly KEEP = 120;

  async poll(): Promise<void> {
    const now = await api<{ atMs: number; topics: TrafficTotals[] }>('GET', '/traffic');
    const topics = new Map(now.topics.map((t) => [t.topic, t]));
    const last = this.last;
    if (last !== null && now.atMs > last.atMs) {
      const seconds = (now.atMs - last.atMs) / 1000;
      for (const [topic, t] of topics) {
        const before = last.topics.get(topic) ?? { topic, messagesIn: 0, bytesIn: 0, bytesOut: 0 };
        this.push(this.bytesIn, topic, now.atMs, (t.bytesIn - before.bytesIn) / seconds);
        this.push(this.bytesOut, topic, now.atMs, (t.bytesOut - before.bytesOut) / seconds);
      }
    }
    this.last = { atMs: now.atMs, topics };
  }

  private push(into: Map<string, [number, number][]>, topic: string, atMs: number, rate: number): void {
    const points = into.get(topic) ?? [];
    points.push([atMs, Math.max(0, rate)]);
    if (points.length > ThroughputHistory.KEEP) points.shift();
    into.set(topic, points);
  }
}

const throughput = new ThroughputHistory();
const main = (): HTMLElement => document.getElementById('main')!;
let refreshTimer: number | undefined;

function show(...children: Child[]): void {
  main().replaceChildren(
    ...children
      .filter((c): c is Node | string => c !== null && c !== undefined && c !== false)
      .map((c) => (typeof c === 'number' ? String(c) : c)),
  );
}

function errorBox(err: unknown): HTMLElement {
  return el('p', { class: 'error', role: 'alert' }, (err as Error).message ?? String(err));
}

function form(title: string, fields: HTMLElement[], submit: string, onSubmit: (data: FormData) => Promise<void>): HTMLElement {
  const status = el('p', { class: 'status' });
  const f = el(
    'form',
    {
      submit: (e: Event) => {
        e.preventDefault();
        status.textContent = '…';
        status.className = 'status';
        onSubmit(new FormData(e.target as HTMLFormElement)).then(
          () => {
            status.textContent = 'done';
          },
          (err: unknown) => {
            status.textContent = (err as Error).message;
            status.className = 'status error';
          },
        );
      },
    },
    el('h3', {}, title),
    ...fields,
    el('button', { type: 'submit' }, submit),
    status,
  );
  return f;
}

function input(name: string, label: string, attrs: Record<string, string> = {}): HTMLElement {
  return el('label', {}, label, el('input', { name, ...attrs }));
}

async function overview(): Promise<void> {
  const cluster = await api<Cluster>('GET', '/cluster');
  await throughput.poll();
  const series = (m: Map<string, [number, number][]>) => [...m].map(([name, points]) => ({ name, points }));
  const quorum = cluster.quorum;
  show(
    el('h2', {}, 'Cluster'),
    el('p', {}, `Cluster id ${cluster.clusterId ?? '-'} · active controller ${cluster.controllerId} · ${cluster.brokers.length} broker(s)`),
    table(
      ['Broker', 'Host', 'Port', 'Rack'],
      cluster.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack ?? '-']),
      { id: 'brokers' },
    ),
    quorum &&
      el(
        'section',
        {},
        el('h3', {}, `Metadata quorum: leader ${quorum.leaderId}, epoch ${quorum.leaderEpoch}, high watermark ${quorum.highWatermark}`),
        table(
          ['Voter', 'Log end offset', 'Lag', 'Last caught up'],
          quorum.voters.map((v) => [
            v.nodeId,
            v.logEndOffset,
            Math.max(0, quorum.highWatermark - v.logEndOffset),
            v.lastCaughtUpTimestampMs > 0 ? new Date(v.lastCaughtUpTimestampMs).toLocaleTimeString() : '-',
          ]),
        ),
      ),
    el('h2', {}, 'Throughput on this node'),
    lineChart(series(throughput.bytesIn), (n) => `${formatBytes(n)}/s`, 'Bytes in per second'),
    lineChart(series(throughput.bytesOut), (n) => `${formatBytes(n)}/s`, 'Bytes out per second'),
  );
}

async function topicsView(): Promise<void> {
  const { topics } = await api<{ topics: TopicListing[] }>('GET', '/topics');
  show(
    el('h2', {}, 'Topics'),
    topics.length === 0
      ? el('p', {}, 'No topics yet.')
      : table(
          ['Topic', 'Partitions'],
          topics.map((t) => [link(`#/topics/${encodeURIComponent(t.name)}`, t.name), t.partitionCount]),
          { id: 'topics' },
        ),
    form(
      'Create a topic',
      [
        input('name', 'Name', { required: '' }),
        input('partitions', 'Partitions', { type: 'number', min: '1', value: '1' }),
        input('replicationFactor', 'Replication factor', { type: 'number', min: '1', placeholder: 'broker default' }),
      ],
      'Create',
      async (data) => {
        const rf = String(data.get('replicationFactor') ?? '');
        await api('POST', '/topics', {
          name: String(data.get('name')),
          partitions: Number(data.get('partitions')),
          ...(rf === '' ? {} : { replicationFactor: Number(rf) }),
        });
        location.hash = `#/topics/${encodeURIComponent(String(data.get('name')))}`;
      },
    ),
  );
}

async function topicView(name: string): Promise<void> {
  const topic = await api<TopicDescription>('GET', `/topics/${encodeURIComponent(name)}`);
  const browser = el('section', { id: 'records' });
  const browse = async (data: FormData) => {
    const params = new URLSearchParams({ format: String(data.get('format')), limit: String(data.get('limit') || '50') });
    const from = String(data.get('from') ?? '').trim();
    if (from !== '') params.set(/^\d+$/.test(from) ? 'offset' : 'timestamp', from);
    const partition = String(data.get('partition'));
    const read = await api<Browse>('GET', `/topics/${encodeURIComponent(name)}/partitions/${partition}/records?${params}`);
    browser.replaceChildren(
      el(
        'p',
        {},
        `Partition ${partition}: log start ${read.logStartOffset}, high watermark ${read.highWatermark}, next ${read.nextOffset}`,
      ),
      read.records.length === 0
        ? el('p', {}, 'No records there.')
        : table(
            ['Offset', 'Timestamp', 'Key', 'Value', 'Headers'],
            read.records.map((r) => [
              r.offset,
              new Date(r.timestamp).toISOString(),
              shownValue(r.key),
              el('code', {}, shownValue(r.value)),
              r.headers.map((h) => `${h.key}=${shownValue(h.value)}`).join(', '),
            ]),
            { id: 'record-table' },
          ),
    );
  };
  const partitionOptions = () => topic.partitions.map((p) => el('option', { value: String(p.partition) }, String(p.partition)));
  show(
    el('h2', {}, `Topic ${topic.name}`),
    el('p', {}, `${topic.partitionCount} partition(s), replication factor ${topic.replicationFactor}`),
    table(
      ['Partition', 'Leader', 'Replicas', 'ISR', 'Log start', 'Log end'],
      topic.partitions.map((p) => [
        p.partition,
        p.leader ?? 'none',
        p.replicas.join(','),
        p.isr.join(','),
        p.logStartOffset ?? '-',
        p.logEndOffset ?? '-',
      ]),
      { id: 'partitions' },
    ),
    topic.policy &&
      el(
        'section',
        {},
        el('h3', {}, 'Policy (sluice apply)'),
        table(
          ['Key schema', 'Value schema', 'Delivery contract'],
          [[topic.policy.key_schema ?? '-', topic.policy.value_schema ?? '-', topic.policy.delivery_contract ?? '-']],
          { id: 'policy' },
        ),
      ),
    el('h3', {}, 'Configs set on the topic'),
    Object.keys(topic.configs).length === 0
      ? el('p', {}, 'None: every config has its default.')
      : table(
          ['Config', 'Value'],
          Object.entries(topic.configs).map(([k, v]) => [k, v ?? '(sensitive)']),
        ),
    form(
      'Browse records',
      [
        el('label', {}, 'Partition', el('select', { name: 'partition' }, ...partitionOptions())),
        input('from', 'From offset or time', { placeholder: 'earliest; 42; 2026-12-04T10:00:00Z' }),
        input('limit', 'Limit', { type: 'number', min: '1', max: '1000', value: '50' }),
        el('label', {}, 'Show as', el('select', { name: 'format' }, ...['text', 'json', 'hex'].map((f) => el('option', { value: f }, f)))),
      ],
      'Browse',
      browse,
    ),
    browser,
    form(
      'Produce a record',
      [
        input('key', 'Key'),
        input('value', 'Value', { required: '' }),
        input('headers', 'Headers', { placeholder: 'name=value, ...' }),
        el('label', {}, 'Partition', el('select', { name: 'partition' }, el('option', { value: '' }, 'by key'), ...partitionOptions())),
      ],
      'Produce',
      async (data) => {
        const headers = Object.fromEntries(
          String(data.get('headers') ?? '')
            .split(',')
            .map((h) => h.trim())
            .filter((h) => h.includes('='))
            .map((h) => [h.slice(0, h.indexOf('=')), h.slice(h.indexOf('=') + 1)]),
        );
        const key = String(data.get('key') ?? '');
        const partition = String(data.get('partition') ?? '');
        await api('POST', `/topics/${encodeURIComponent(name)}/records`, {
          value: String(data.get('value')),
          headers,
          ...(key === '' ? {} : { key }),
          ...(partition === '' ? {} : { partition: Number(partition) }),
        });
      },
    ),
  );
}

async function groupsView(): Promise<void> {
  const { groups } = await api<{ groups: GroupListing[] }>('GET', '/groups');
  show(
    el('h2', {}, 'Consumer groups'),
    groups.length === 0
      ? el('p', {}, 'No consumer groups yet.')
      : table(
          ['Group', 'State', 'Members'],
          groups.map((g) => [link(`#/groups/${encodeURIComponent(g.groupId)}`, g.groupId), g.state, g.members]),
          { id: 'groups' },
        ),
  );
}

async function groupView(id: string): Promise<void> {
  const [group, history] = await Promise.all([
    api<GroupDescription>('GET', `/groups/${encodeURIComponent(id)}`),
    api<{ samples: LagSample[] }>('GET', `/groups/${encodeURIComponent(id)}/lag-history`),
  ]);
  const totalLag = group.partitions.reduce((n, p) => n + (p.lag ?? 0), 0);
  const maxLagMs = Math.max(0, ...group.partitions.map((p) => p.lagMs ?? 0));
  const samples = history.samples;
  show(
    el('h2', {}, `Group ${group.groupId}`),
    el(
      'p',
      { id: 'group-summary' },
      `${group.state} · ${group.members.length} member(s) · lag ${totalLag} record(s) · oldest unconsumed ${formatDuration(maxLagMs)} old`,
    ),
    table(
      ['Topic', 'Partition', 'Committed', 'Log end', 'Lag', 'Lag time', 'Member'],
      group.partitions.map((p) => [
        p.topic,
        p.partition,
        p.committedOffset < 0 ? '-' : p.committedOffset,
        p.logEndOffset,
        p.lag ?? '-',
        p.lagMs === null ? '-' : formatDuration(p.lagMs),
        p.clientId ?? '-',
      ]),
      { id: 'lag' },
    ),
    el('h3', {}, 'Lag over time'),
    lineChart(
      [{ name: 'records behind', points: samples.map((s) => [s.atMs, s.partitions.reduce((n, p) => n + p.lag, 0)] as [number, number]) }],
      (n) => String(Math.round(n)),
      'Lag in records',
    ),
    lineChart(
      [
        {
          name: 'oldest unconsumed',
          points: samples.map((s) => [s.atMs, Math.max(0, ...s.partitions.map((p) => p.lagMs)) / 1000] as [number, number]),
        },
      ],
      (n) => `${n.toFixed(0)} s`,
      'Lag in time',
    ),
    group.members.length > 0 &&
      table(
        ['Member', 'Client', 'Host', 'Assignment'],
        group.members.map((m) => [m.memberId, m.clientId, m.host, m.assignment.map((a) => `${a.topic}-${a.partition}`).join(', ')]),
      ),
  );
}

/** Which view the hash names, and how often it refreshes itself (0: never, forms keep their input). */
function route(): { render: () => Promise<void>; refreshMs: number } {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const [section, name] = parts;
  if (section === 'topics' && name !== undefined) return { render: () => topicView(name), refreshMs: 0 };
  if (section === 'topics') return { render: topicsView, refreshMs: 0 };
  if (section === 'groups' && name !== undefined) return { render: () => groupView(name), refreshMs: 5000 };
  if (section === 'groups') return { render: groupsView, refreshMs: 5000 };
  return { render: overview, refreshMs: 2000 };
}

let renders: Promise<void> = Promise.resolve();

/**
 * Renders the view the hash names once the render before it is done: a view shows what it
 * fetched when its fetch completes, and one still fetching when the hash changed would
 * otherwise replace the newer view. `data-ready` and `data-view` (the hash shown) say when the
 * last one is on the page.
 */
function render(): Promise<void> {
  document.body.dataset.ready = 'false';
  const rendered: Promise<void> = renders.then(renderView).finally(() => {
    if (renders !== rendered) return;
    document.body.dataset.view = location.hash;
    document.body.dataset.ready = 'true';
  });
  renders = rendered;
  return rendered;
}

/** Never rejects: a render that failed (a hash that does not decode, a fetch) shows why, and the next one runs. */
async function renderView(): Promise<void> {
  window.clearTimeout(refreshTimer);
  let refreshMs = 0;
  try {
    const view = route();
    refreshMs = view.refreshMs;
    const section = location.hash.replace(/^#\/?/, '').split('/')[0] ?? '';
    for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a')) a.classList.toggle('active', a.dataset.section === section);
    await view.render();
  } catch (err) {
    show(errorBox(err));
  }
  if (refreshMs > 0) refreshTimer = window.setTimeout(() => void render(), refreshMs);
}

window.addEventListener('hashchange', () => void render());
void render();
