// The Node flags the broker process runs with: `npm start` and the `sluice` command pass
// them, as Kafka's start scripts pass the JVM its GC settings. Reading produce traffic
// allocates a buffer per socket read and per request frame (hundreds of MB/s of 64 KiB
// buffers under load); with V8's default 16 MiB semi-spaces many of them are promoted, and
// the old-generation collections that follow, each waking V8's helper threads, cost more
// than the appends themselves. 32 MiB semi-spaces keep them in the young generation
// (scripts/bench/broker measures the difference). The semi-spaces grow to that size only
// under such allocation rates; an idle broker does not pay for them.
//
// What a broker keeps does outlive young collections: long polls of consumers and followers
// (up to 500 ms), acks=all produces waiting for their followers, fetch sessions. It is promoted
// and dies in the old generation, whose allocation limit V8 sets from what survived the last
// full collection, a few tens of MiB in a broker. On three nodes under replicated load that
// limit fell, on some nodes of most runs, to a full collection every 100 ms (5-7 ms pauses,
// up to 20 % of a core), and the produce-to-consume p99 at 40,000 records/s was 24-125 ms
// over six runs (55-125 ms in the five where a node did so); with --initial-old-space-size=64
// every node made one or two full collections in the run and the p99 was 15-19 ms over four
// (scripts/bench/cluster.ts). Up to 64 MiB of old garbage waits
// for its collection in return; Kafka's start script gives its JVM a fixed 1 GiB heap.
export const BROKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32', '--initial-old-space-size=64'];
