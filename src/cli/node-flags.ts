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
// over six runs; with a floor under it every node made one or two full collections in the run
// and the p99 was 15-19 ms over four (scripts/bench/cluster.ts). The floor must leave room
// above the live heap for a whole young generation too: V8 starts marking for a full
// collection whenever the room left under the limit is no more than the young generation's
// capacity. A 64 MiB floor over ~20 MiB live did not, and under one saturated producer stream
// (scripts/bench/fanout.ts's hot partition, ~350 MiB/s) the broker made a full collection
// every 200 ms: 62-65 in a 15 s run, against 10-12 with 128, 256 or 512 MiB, where the cold
// partitions' produce p99 was 20-22 ms with 64, 16-17 with 128 and 12-13 with 256, and the
// hot throughput 300 MiB/s against 345-365. Up to 256 MiB of old garbage waits for its
// collection in return (the peak resident set rose 20 MiB in those runs); Kafka's start
// script gives its JVM a fixed 1 GiB heap.
export const BROKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32', '--initial-old-space-size=256'];
