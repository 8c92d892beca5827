// Detects real I/O that escaped the seams: a real socket, server, DNS look-up or file
// operation started by the code under simulation shows up among Node's active resources,
// and would make a seed's run depend on the real machine. Timers are left out: the system
// clock's timers are unref'd (Node does not list them), and a test runner keeps real timers
// of its own.

export type ResourceCounts = Map<string, number>;

/** Node's active resources by type (timers, sockets, file requests, ...). */
export function realResources(): ResourceCounts {
  const counts: ResourceCounts = new Map();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** The resource types of which there are more now than in `baseline`, as "Type +n". */
export function realResourcesSince(baseline: ResourceCounts): string[] {
  const out: string[] = [];
  for (const [type, n] of realResources()) {
    // The simulation's own settling turn, and timers (see above).
    if (type === 'Immediate' || type === 'Timeout') continue;
    const extra = n - (baseline.get(type) ?? 0);
    if (extra > 0) out.push(`${type} +${extra}`);
  }
  return out;
}
