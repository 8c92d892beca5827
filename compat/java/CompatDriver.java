import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * compat driver for Kafka's Java client, one long-lived JVM per driver (the protocol of
 * compat/platformatic/rpc.ts, as compat/clients/resident-process.ts speaks it): run as
 * {@code java CompatDriver BOOTSTRAP}, it reads one request a line on stdin,
 * {@code {"id": 1, "method": "produce", "args": [{...parameters}]}}, runs each on its own thread
 * with fresh client objects, and answers each on stdout as {@code {"id": 1, "result": ...}} or,
 * for the client's error, {@code {"id": 1, "error": {"name", "message", "stack"}}}. It exits at
 * the end of stdin. stdout carries only replies: anything else printed goes to stderr.
 * The producer keeps the client's defaults, idempotence included.
 */
public final class CompatDriver {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static String bootstrap;
  private static PrintStream replies;

  public static void main(String[] args) throws Exception {
    replies = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    bootstrap = args[0];
    // Daemon threads: an operation still running when stdin ends must not hold the JVM.
    ExecutorService operations = Executors.newCachedThreadPool(task -> {
      Thread t = new Thread(task, "compat-operation");
      t.setDaemon(true);
      return t;
    });
    BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = requests.readLine(); line != null; line = requests.readLine()) {
      if (line.isBlank()) continue;
      JsonNode request;
      try {
        request = JSON.readTree(line);
      } catch (JsonProcessingException error) {
        System.err.println("CompatDriver: not a request: " + line);
        continue;
      }
      if (!request.path("id").isNumber() || !request.path("method").isTextual()) {
        System.err.println("CompatDriver: not a request: " + line);
        continue;
      }
      operations.execute(() -> answer(request));
    }
    System.exit(0);
  }

  private static void answer(JsonNode request) {
    ObjectNode reply = JSON.createObjectNode().put("id", request.get("id").asLong());
    try {
      reply.set("result", JSON.valueToTree(run(request.get("method").asText(), request.path("args").path(0))));
    } catch (Throwable error) {
      Throwable cause = error instanceof ExecutionException && error.getCause() != null ? error.getCause() : error;
      StringWriter stack = new StringWriter();
      cause.printStackTrace(new PrintWriter(stack));
      reply.putObject("error")
          .put("name", cause.getClass().getSimpleName())
          .put("message", String.valueOf(cause.getMessage()))
          .put("stack", stack.toString());
    }
    String line;
    try {
      line = JSON.writeValueAsString(reply);
    } catch (JsonProcessingException error) {
      // A tree of strings and numbers always serializes: this is a bug, and the parent sees the
      // exit with this trace.
      error.printStackTrace();
      System.exit(1);
      return;
    }
    synchronized (replies) {
      replies.println(line);
    }
  }

  private static Object run(String operation, JsonNode p) throws Exception {
    switch (operation) {
      case "metadata": return metadata();
      case "describeTopic": return describeTopic(p.get("topic").asText());
      case "createTopic": return createTopic(p);
      case "listTopics": return listTopics();
      case "createPartitions": return createPartitions(p.get("topic").asText(), p.get("totalCount").asInt());
      case "describeConfigs": return describeConfigs(p.get("topic").asText());
      case "alterConfigs": return alterConfigs(p.get("topic").asText(), p.get("configs"));
      case "deleteTopic": return deleteTopic(p.get("topic").asText());
      case "produce": return produce(p);
      case "produceTransactions": return produceTransactions(p);
      case "transformInTransaction": return transformInTransaction(p);
      case "consume": return consume(p);
      case "listOffset": return listOffset(p);
      case "groupConsume": return groupConsume(p);
      case "committedOffsets": return committedOffsets(p);
      default: throw new IllegalArgumentException("unknown operation " + operation);
    }
  }

  private static Admin admin() {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    return Admin.create(props);
  }

  private static Object metadata() throws Exception {
    try (Admin admin = admin()) {
      DescribeClusterResult cluster = admin.describeCluster();
      ObjectNode out = JSON.createObjectNode();
      ArrayNode brokers = out.putArray("brokers");
      for (Node n : cluster.nodes().get()) {
        brokers.addObject().put("id", n.id()).put("host", n.host()).put("port", n.port());
      }
      Node controller = cluster.controller().get();
      if (controller == null) out.putNull("controllerId");
      else out.put("controllerId", controller.id());
      ArrayNode topics = out.putArray("topics");
      for (String t : admin.listTopics().names().get()) topics.add(t);
      return out;
    }
  }

  private static Object describeTopic(String topic) throws Exception {
    try (Admin admin = admin()) {
      TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
      return JSON.createObjectNode().put("partitions", d.partitions().size());
    }
  }

  private static Map<String, String> stringMap(JsonNode node) {
    Map<String, String> out = new TreeMap<>();
    node.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
    return out;
  }

  private static Object createTopic(JsonNode p) throws Exception {
    try (Admin admin = admin()) {
      NewTopic t = new NewTopic(p.get("topic").asText(), p.get("partitions").asInt(), (short) 1)
          .configs(stringMap(p.get("configs")));
      admin.createTopics(List.of(t)).all().get();
      return NullNode.instance;
    }
  }

  private static Object listTopics() throws Exception {
    try (Admin admin = admin()) {
      ArrayNode out = JSON.createArrayNode();
      for (String t : admin.listTopics().names().get()) out.add(t);
      return out;
    }
  }

  private static Object createPartitions(String topic, int total) throws Exception {
    try (Admin admin = admin()) {
      admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
      return NullNode.instance;
    }
  }

  private static Object describeConfigs(String topic) throws Exception {
    try (Admin admin = admin()) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
      ObjectNode out = JSON.createObjectNode();
      for (ConfigEntry e : config.entries()) out.put(e.name(), e.value());
      return out;
    }
  }

  private static Object alterConfigs(String topic, JsonNode configs) throws Exception {
    try (Admin admin = admin()) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      List<AlterConfigOp> ops = new ArrayList<>();
      for (Map.Entry<String, String> e : stringMap(configs).entrySet()) {
        ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
      }
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
      return NullNode.instance;
    }
  }

  private static Object deleteTopic(String topic) throws Exception {
    try (Admin admin = admin()) {
      admin.deleteTopics(List.of(topic)).all().get();
      return NullNode.instance;
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  private static Object produce(JsonNode p) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, p.get("codec").asText());
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    String topic = p.get("topic").asText();
    List<Future<RecordMetadata>> futures = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (JsonNode r : p.get("records")) {
        List<Header> headers = new ArrayList<>();
        for (JsonNode h : r.get("headers")) headers.add(new RecordHeader(h.get(0).asText(), bytes(h.get(1).asText())));
        Long timestamp = r.hasNonNull("timestamp") ? r.get("timestamp").asLong() : null;
        byte[] key = r.get("key").isNull() ? null : bytes(r.get("key").asText());
        futures.add(producer.send(new ProducerRecord<>(topic, null, timestamp, key, bytes(r.get("value").asText()), headers)));
      }
      producer.flush();
      ArrayNode out = JSON.createArrayNode();
      for (Future<RecordMetadata> f : futures) {
        RecordMetadata m = f.get();
        out.addObject().put("partition", m.partition()).put("offset", m.offset());
      }
      return out;
    }
  }

  private static Object produceTransactions(JsonNode p) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, p.get("transactionalId").asText());
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    String topic = p.get("topic").asText();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      for (JsonNode txn : p.get("transactions")) {
        producer.beginTransaction();
        for (JsonNode r : txn.get("records")) {
          List<Header> headers = new ArrayList<>();
          for (JsonNode h : r.get("headers")) headers.add(new RecordHeader(h.get(0).asText(), bytes(h.get(1).asText())));
          byte[] key = r.get("key").isNull() ? null : bytes(r.get("key").asText());
          producer.send(new ProducerRecord<>(topic, null, null, key, bytes(r.get("value").asText()), headers));
        }
        producer.flush();
        if (txn.get("commit").asBoolean()) producer.commitTransaction();
        else producer.abortTransaction();
      }
    }
    return NullNode.instance;
  }

  private static Object transformInTransaction(JsonNode p) throws Exception {
    Properties consumerConfig = consumerProps(p.get("group").asText(), "earliest");
    consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Properties producerConfig = new Properties();
    producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, p.get("transactionalId").asText());
    producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    String output = p.get("output").asText();
    int count = p.get("count").asInt();
    long deadline = System.currentTimeMillis() + p.get("timeoutMs").asLong();
    try (KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      consumer.subscribe(List.of(p.get("input").asText()));
      List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
      while (read.size() < count) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("read " + read.size() + " of " + count + " records");
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) read.add(r);
      }
      producer.beginTransaction();
      Map<TopicPartition, OffsetAndMetadata> offsets = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
      for (ConsumerRecord<byte[], byte[]> r : read) {
        producer.send(new ProducerRecord<>(output, r.value()));
        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
      }
      // The group's generation and member id go with the offsets (KIP-447).
      producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
      producer.commitTransaction();
    }
    return NullNode.instance;
  }

  private static ObjectNode record(ConsumerRecord<byte[], byte[]> r) {
    ObjectNode out = JSON.createObjectNode();
    out.put("partition", r.partition()).put("offset", r.offset()).put("key", text(r.key()));
    out.put("value", r.value() == null ? "" : text(r.value())).put("timestamp", r.timestamp());
    ArrayNode headers = out.putArray("headers");
    for (Header h : r.headers()) headers.addArray().add(h.key()).add(h.value() == null ? "" : text(h.value()));
    return out;
  }

  private static Properties consumerProps(String group, String reset) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
    if (group != null) props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    return props;
  }

  private static Object consume(JsonNode p) {
    Properties props = consumerProps(null, p.get("autoOffsetReset").asText());
    if (p.hasNonNull("readCommitted")) {
      props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, p.get("readCommitted").asBoolean() ? "read_committed" : "read_uncommitted");
    }
    if (p.hasNonNull("maxWaitMs")) {
      props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, p.get("maxWaitMs").asText());
      props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(p.get("maxWaitMs").asInt() * 2));
    }
    String topic = p.get("topic").asText();
    int count = p.get("count").asInt();
    long deadline = System.currentTimeMillis() + p.get("timeoutMs").asLong();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (JsonNode n : p.get("partitions")) tps.add(new TopicPartition(topic, n.asInt()));
      consumer.assign(tps);
      JsonNode from = p.get("from");
      if (from.isObject()) for (TopicPartition tp : tps) consumer.seek(tp, from.get("offset").asLong());
      else if (from.asText().equals("earliest")) consumer.seekToBeginning(tps);
      else consumer.seekToEnd(tps);
      ArrayNode out = JSON.createArrayNode();
      while (out.size() < count) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("received " + out.size() + " of " + count + " records");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) out.add(record(r));
      }
      return out;
    }
  }

  private static Object listOffset(JsonNode p) throws Exception {
    TopicPartition tp = new TopicPartition(p.get("topic").asText(), p.get("partition").asInt());
    JsonNode spec = p.get("spec");
    OffsetSpec offsetSpec = spec.isObject()
        ? OffsetSpec.forTimestamp(spec.get("timestamp").asLong())
        : spec.asText().equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest();
    try (Admin admin = admin()) {
      ListOffsetsResult.ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, offsetSpec)).partitionResult(tp).get();
      return info.offset() < 0 ? NullNode.instance : JSON.getNodeFactory().numberNode(info.offset());
    }
  }

  /** Members poll on their own threads (a KafkaConsumer belongs to one thread). */
  private static Object groupConsume(JsonNode p) throws Exception {
    String group = p.get("group").asText();
    String topic = p.get("topic").asText();
    int members = p.get("members").asInt();
    int count = p.get("count").asInt();
    long deadline = System.currentTimeMillis() + p.get("timeoutMs").asLong();
    Map<String, ObjectNode> records = new TreeMap<>();
    List<List<Integer>> assignments = new ArrayList<>();
    boolean[] caughtUp = new boolean[members];
    Throwable[] errors = new Throwable[members];
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < members; i++) {
      assignments.add(List.of());
      final int index = i;
      Thread t = new Thread(() -> {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(
            consumerProps(group, "earliest"), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
          c.subscribe(List.of(topic));
          while (!stop.get()) {
            ConsumerRecords<byte[], byte[]> batch = c.poll(Duration.ofMillis(100));
            Set<TopicPartition> assigned = c.assignment();
            Map<TopicPartition, Long> ends = assigned.isEmpty() ? Map.of() : c.endOffsets(assigned);
            boolean atEnd = true;
            for (TopicPartition tp : assigned) atEnd &= c.position(tp) >= ends.get(tp);
            List<Integer> partitions = new ArrayList<>();
            for (TopicPartition tp : assigned) partitions.add(tp.partition());
            partitions.sort(null);
            synchronized (records) {
              for (ConsumerRecord<byte[], byte[]> r : batch) records.put(r.partition() + ":" + r.offset(), record(r));
              assignments.set(index, partitions);
              caughtUp[index] = atEnd;
            }
          }
          c.commitSync();
        } catch (Throwable error) {
          synchronized (records) {
            errors[index] = error;
          }
        }
      });
      threads.add(t);
      t.start();
    }
    try {
      while (true) {
        synchronized (records) {
          for (Throwable e : errors) if (e != null) throw new IllegalStateException("group member failed: " + e, e);
          Set<Integer> seen = new HashSet<>();
          boolean settled = true;
          int total = 0;
          for (List<Integer> a : assignments) {
            settled &= !a.isEmpty();
            seen.addAll(a);
            total += a.size();
          }
          settled &= seen.size() == total;
          boolean allCaughtUp = true;
          for (boolean b : caughtUp) allCaughtUp &= b;
          if (records.size() >= count && settled && allCaughtUp) break;
          if (System.currentTimeMillis() > deadline) {
            throw new IllegalStateException("group did not settle with " + records.size() + " records: " + assignments);
          }
        }
        Thread.sleep(50);
      }
    } finally {
      stop.set(true);
      for (Thread t : threads) t.join(60_000);
    }
    for (Throwable e : errors) if (e != null) throw new IllegalStateException("group member failed: " + e, e);
    ObjectNode out = JSON.createObjectNode();
    ArrayNode a = out.putArray("assignments");
    for (List<Integer> partitions : assignments) {
      ArrayNode one = a.addArray();
      for (int partition : partitions) one.add(partition);
    }
    ArrayNode rs = out.putArray("records");
    for (ObjectNode r : records.values()) rs.add(r);
    return out;
  }

  private static Object committedOffsets(JsonNode p) throws Exception {
    String topic = p.get("topic").asText();
    try (Admin admin = admin()) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin.listConsumerGroupOffsets(p.get("group").asText()).partitionsToOffsetAndMetadata().get();
      ArrayNode out = JSON.createArrayNode();
      for (int i = 0; i < p.get("partitions").asInt(); i++) {
        OffsetAndMetadata m = offsets.get(new TopicPartition(topic, i));
        if (m == null) out.addNull();
        else out.add(m.offset());
      }
      return out;
    }
  }
}
