import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's exactly-once consume-transform-produce loop with the Java client: a read_committed
 * consumer of INPUT in GROUP, a transactional producer writing each record's value + "-out"
 * to OUTPUT with the consumer's offsets committed in the same transaction
 * (sendOffsetsToTransaction with the group's metadata, KIP-447). For
 * test/integration/broker/transactions.test.ts. Prints one JSON line per event:
 *
 * <pre>
 *   {"event":"committed","records":n}   a transaction of n records committed
 *   {"event":"open","records":n}        (mode open) a transaction of n records sent, offsets
 *                                       added, left open: the process waits to be killed
 *   {"event":"done","records":n}        (mode run) n records processed in all
 * </pre>
 *
 * Run as {@code java TransformProcessor BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID MODE
 * EXPECTED}: mode {@code run} processes until EXPECTED records are committed, mode {@code open}
 * leaves its first transaction open.
 */
public final class TransformProcessor {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String input = args[1];
    String output = args[2];
    String group = args[3];
    String transactionalId = args[4];
    boolean leaveOpen = args[5].equals("open");
    long expected = Long.parseLong(args[6]);

    Properties consumerProps = new Properties();
    consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // The group's lowest session timeout: a killed instance leaves the group soon, so its
    // successor's first rebalance does not wait out the 45 s default.
    consumerProps.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());

    Properties producerProps = new Properties();
    producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps);
        KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
      producer.initTransactions();
      consumer.subscribe(List.of(input));
      long processed = 0;
      long deadline = System.currentTimeMillis() + 90_000;
      while (processed < expected && System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
        if (records.isEmpty()) continue;
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<String, String> record : records) {
          producer.send(new ProducerRecord<>(output, record.key(), record.value() + "-out"));
          offsets.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        if (leaveOpen) {
          producer.flush();
          print("open", records.count());
          Thread.sleep(Long.MAX_VALUE);
        }
        producer.commitTransaction();
        processed += records.count();
        print("committed", records.count());
      }
      print("done", processed);
    }
  }

  private static void print(String event, long records) throws Exception {
    Map<String, Object> line = new HashMap<>();
    line.put("event", event);
    line.put("records", records);
    System.out.println(JSON.writeValueAsString(line));
    System.out.flush();
  }
}
