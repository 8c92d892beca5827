package sluice.oracle;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.PrintStream;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Kafka's own codec behind a line protocol, for differential tests.
 *
 * One JSON object per line on stdin, one answer per line on stdout, in order:
 * {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": "..."}.
 *
 * Messages are found by class name (org.apache.kafka.common.message.NameData and
 * NameDataJsonConverter, or Name for data records, in the few packages Kafka generates
 * into), so one program covers every API and record schema the jars know. Each argument is
 * a directory of newer Kafka jars, loaded in a class loader of its own and consulted, in
 * order, only for versions the jars before it predate.
 * In JSON sent back, int64 values become decimal strings: JavaScript numbers lose
 * precision above 2^53, and the caller knows from its schema which fields are int64.
 */
public final class Oracle {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        // Anything the library prints must not corrupt the answer stream.
        PrintStream answers = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        List<Kafka> kafkas = new ArrayList<>();
        kafkas.add(new Kafka("main", Oracle.class.getClassLoader()));
        for (String dir : args) {
            File[] jars = new File(dir).listFiles((d, n) -> n.endsWith(".jar"));
            if (jars == null || jars.length == 0) throw new IllegalArgumentException("no jars in " + dir);
            URL[] urls = new URL[jars.length];
            for (int i = 0; i < jars.length; i++) urls[i] = jars[i].toURI().toURL();
            kafkas.add(new Kafka(dir, new ChildFirstLoader(urls, Oracle.class.getClassLoader())));
        }
        Oracle oracle = new Oracle(kafkas.toArray(new Kafka[0]));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(answers, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer = NODES.objectNode();
            JsonNode request = null;
            try {
                request = MAPPER.readTree(line);
                answer.set("id", request.get("id"));
                oracle.handle(request, answer);
                answer.put("ok", true);
            } catch (Throwable e) {
                Throwable cause = e instanceof InvocationTargetException && e.getCause() != null ? e.getCause() : e;
                answer.removeAll();
                if (request != null) answer.set("id", request.get("id"));
                answer.put("ok", false);
                answer.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
                StringWriter trace = new StringWriter();
                cause.printStackTrace(new PrintWriter(trace));
                answer.put("trace", trace.toString());
            }
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }

    private void handle(JsonNode request, ObjectNode answer) throws Exception {
        String op = request.path("op").asText();
        switch (op) {
            case "versions" -> versions(request, answer);
            case "encode" -> encode(request, answer);
            case "decode" -> decode(request, answer);
            case "records-build" -> recordsBuild(request, answer);
            case "records-control" -> recordsControl(request, answer);
            case "records-validate" -> recordsValidate(request, answer);
            default -> throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    // ---- messages ----

    /**
     * One copy of Kafka's message classes. Everything goes through reflection so that a
     * second, newer kafka-clients jar can sit in its own class loader beside the first.
     */
    private static final class Kafka {
        final String label;
        final ClassLoader loader;
        /** MessageUtil.toByteBuffer, which Kafka 4.3 replaced by toByteBufferAccessor (null then). */
        final Method toByteBuffer;
        final Method toByteBufferAccessor;
        final Class<?> readable;
        final Class<?> accessor;

        Kafka(String label, ClassLoader loader) throws Exception {
            this.label = label;
            this.loader = loader;
            Class<?> message = loader.loadClass("org.apache.kafka.common.protocol.Message");
            Class<?> util = loader.loadClass("org.apache.kafka.common.protocol.MessageUtil");
            Method legacy;
            try {
                legacy = util.getMethod("toByteBuffer", message, short.class);
            } catch (NoSuchMethodException e) {
                legacy = null;
            }
            this.toByteBuffer = legacy;
            this.toByteBufferAccessor = legacy != null ? null : util.getMethod("toByteBufferAccessor", message, short.class);
            this.readable = loader.loadClass("org.apache.kafka.common.protocol.Readable");
            this.accessor = loader.loadClass("org.apache.kafka.common.protocol.ByteBufferAccessor");
        }

        /** The message's bytes at `version`, read to their end. */
        ByteBuffer serialize(Object message, short version) throws ReflectiveOperationException {
            if (toByteBuffer != null) return (ByteBuffer) toByteBuffer.invoke(null, message, version);
            Object written = toByteBufferAccessor.invoke(null, message, version);
            ByteBuffer buffer = (ByteBuffer) accessor.getMethod("buffer").invoke(written);
            return buffer.position() == 0 ? buffer : buffer.flip();
        }

        /** The kafka-clients jar these classes come from, e.g. kafka-clients-3.9.1. */
        String version() {
            try {
                Class<?> message = loader.loadClass("org.apache.kafka.common.protocol.Message");
                String path = message.getProtectionDomain().getCodeSource().getLocation().getPath();
                return new File(path).getName().replaceFirst("\\.jar$", "");
            } catch (ReflectiveOperationException | NullPointerException e) {
                return label;
            }
        }
    }

    /** Loads org.apache.kafka classes from its own jars first, everything else (Jackson) from the parent. */
    private static final class ChildFirstLoader extends URLClassLoader {
        ChildFirstLoader(URL[] urls, ClassLoader parent) {
            super(urls, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("org.apache.kafka.")) return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) c = findClass(name);
                if (resolve) resolveClass(c);
                return c;
            }
        }
    }

    private record MessageClasses(Kafka kafka, Class<?> data, Method read, Method write, short lowest, short highest) { }

    private static final String METADATA_PACKAGE = "org.apache.kafka.common.metadata";

    /** Where each kind of generated message class lives across the Kafka modules. */
    private static final String[] MESSAGE_PACKAGES = {
        "org.apache.kafka.common.message.",
        "org.apache.kafka.common.metadata.",
        "org.apache.kafka.coordinator.group.generated.",
        "org.apache.kafka.coordinator.transaction.generated.",
        "org.apache.kafka.raft.generated.",
    };

    private final Kafka[] kafkas;
    private final Map<String, MessageClasses> classes = new HashMap<>();

    private Oracle(Kafka[] kafkas) {
        this.kafkas = kafkas;
    }

    private static MessageClasses find(Kafka kafka, String name) throws Exception {
        // API messages and headers are generated as NameData, data records as Name.
        for (String pkg : MESSAGE_PACKAGES) {
            for (String className : new String[] {name + "Data", name}) {
                Class<?> data;
                Class<?> converter;
                try {
                    data = kafka.loader.loadClass(pkg + className);
                    converter = kafka.loader.loadClass(pkg + className + "JsonConverter");
                } catch (ClassNotFoundException e) {
                    continue;
                }
                return new MessageClasses(kafka, data,
                    converter.getMethod("read", JsonNode.class, short.class),
                    converter.getMethod("write", data, short.class),
                    data.getField("LOWEST_SUPPORTED_VERSION").getShort(null),
                    data.getField("HIGHEST_SUPPORTED_VERSION").getShort(null));
            }
        }
        return null;
    }

    /**
     * The first Kafka that knows the message at this version; the newest one's classes when
     * version is -1. Metadata records come from the newest Kafka that knows the version, as
     * the project generates them from Kafka 4.4's definitions: an older jar's JSON reader would
     * drop the fields a later version added instead of refusing them.
     */
    private MessageClasses classesFor(String name, int version) throws Exception {
        MessageClasses fallback = null;
        MessageClasses newestMetadata = null;
        for (Kafka kafka : kafkas) {
            String key = kafka.label + "/" + name;
            MessageClasses c = classes.get(key);
            if (c == null && !classes.containsKey(key)) {
                c = find(kafka, name);
                classes.put(key, c);
            }
            if (c == null) continue;
            boolean knows = version >= c.lowest && version <= c.highest;
            if (knows && c.data.getPackageName().equals(METADATA_PACKAGE)) newestMetadata = c;
            else if (knows) return c;
            if (fallback == null || c.highest > fallback.highest) fallback = c;
        }
        if (newestMetadata != null) return newestMetadata;
        if (fallback == null) throw new ClassNotFoundException("no Kafka message class for " + name);
        if (version == -1) return fallback;
        throw new UnsupportedVersionError(name + " v" + version + " is unknown to every Kafka jar on hand");
    }

    private static final class UnsupportedVersionError extends Exception {
        private static final long serialVersionUID = 1L;

        UnsupportedVersionError(String message) {
            super(message);
        }
    }

    private void versions(JsonNode request, ObjectNode answer) throws Exception {
        String name = request.get("name").asText();
        int lowest = Integer.MAX_VALUE;
        int highest = -1;
        ArrayNode sources = answer.putArray("sources");
        for (Kafka kafka : kafkas) {
            MessageClasses c = find(kafka, name);
            if (c == null) continue;
            ObjectNode source = sources.addObject();
            source.put("kafka", kafka.version());
            source.put("lowest", c.lowest);
            source.put("highest", c.highest);
            lowest = Math.min(lowest, c.lowest);
            highest = Math.max(highest, c.highest);
        }
        if (highest < 0) throw new ClassNotFoundException("no Kafka message class for " + name);
        answer.put("lowest", lowest);
        answer.put("highest", highest);
    }

    private void encode(JsonNode request, ObjectNode answer) throws Exception {
        short version = (short) request.get("version").asInt();
        MessageClasses c = classesFor(request.get("name").asText(), version);
        Object message = c.read.invoke(null, request.get("json"), version);
        ByteBuffer buffer = c.kafka.serialize(message, version);
        answer.put("kafka", c.kafka.version());
        answer.put("bytes", Base64.getEncoder().encodeToString(toArray(buffer)));
    }

    private void decode(JsonNode request, ObjectNode answer) throws Exception {
        short version = (short) request.get("version").asInt();
        MessageClasses c = classesFor(request.get("name").asText(), version);
        ByteBuffer buffer = ByteBuffer.wrap(Base64.getDecoder().decode(request.get("bytes").asText()));
        Object message = c.data.getConstructor().newInstance();
        Object readable = c.kafka.accessor.getConstructor(ByteBuffer.class).newInstance(buffer);
        c.data.getMethod("read", c.kafka.readable, short.class).invoke(message, readable, version);
        List<?> unknown = (List<?>) c.data.getMethod("unknownTaggedFields").invoke(message);
        answer.put("kafka", c.kafka.version());
        answer.put("remaining", buffer.remaining());
        answer.put("unknownTaggedFields", unknown.size());
        answer.set("json", jsSafe((JsonNode) c.write.invoke(null, message, version)));
    }

    /** Longs as decimal strings, non-finite doubles as their names: what JSON.parse can take exactly. */
    private static JsonNode jsSafe(JsonNode node) {
        if (node.isLong() || node.isBigInteger()) return TextNode.valueOf(node.asText());
        if (node instanceof DoubleNode d && !Double.isFinite(d.doubleValue())) {
            return TextNode.valueOf(Double.toString(d.doubleValue()));
        }
        if (node.isObject()) {
            ObjectNode copy = NODES.objectNode();
            node.fields().forEachRemaining(e -> copy.set(e.getKey(), jsSafe(e.getValue())));
            return copy;
        }
        if (node.isArray()) {
            ArrayNode copy = NODES.arrayNode();
            node.forEach(e -> copy.add(jsSafe(e)));
            return copy;
        }
        return node;
    }

    // ---- record batches ----

    private static byte[] nullableBase64(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    private static Compression compression(String codec) {
        CompressionType type = CompressionType.forName(codec);
        return Compression.of(type).build();
    }

    private void recordsBuild(JsonNode request, ObjectNode answer) {
        byte magic = (byte) request.path("magic").asInt(RecordBatch.CURRENT_MAGIC_VALUE);
        Compression compression = compression(request.path("codec").asText("none"));
        TimestampType timestampType = "logAppend".equals(request.path("timestampType").asText("create"))
            ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        if (magic == RecordBatch.MAGIC_VALUE_V0) timestampType = TimestampType.NO_TIMESTAMP_TYPE;
        long baseOffset = request.path("baseOffset").asLong(0);
        long logAppendTime = request.path("logAppendTime").asLong(RecordBatch.NO_TIMESTAMP);
        long producerId = request.path("producerId").asLong(RecordBatch.NO_PRODUCER_ID);
        short producerEpoch = (short) request.path("producerEpoch").asInt(RecordBatch.NO_PRODUCER_EPOCH);
        int baseSequence = request.path("baseSequence").asInt(RecordBatch.NO_SEQUENCE);
        boolean transactional = request.path("isTransactional").asBoolean(false);
        int partitionLeaderEpoch = request.path("partitionLeaderEpoch").asInt(RecordBatch.NO_PARTITION_LEADER_EPOCH);

        MemoryRecordsBuilder builder = MemoryRecords.builder(ByteBuffer.allocate(1024), magic, compression,
            timestampType, baseOffset, logAppendTime, producerId, producerEpoch, baseSequence, transactional,
            false, partitionLeaderEpoch);
        long offset = baseOffset;
        for (JsonNode r : request.path("records")) {
            if (r.has("offset")) offset = r.get("offset").asLong();
            JsonNode headersNode = r.path("headers");
            Header[] headers = new Header[headersNode.size()];
            for (int i = 0; i < headers.length; i++) {
                JsonNode h = headersNode.get(i);
                headers[i] = new RecordHeader(h.get("key").asText(), nullableBase64(h.get("value")));
            }
            long timestamp = r.path("timestamp").asLong(RecordBatch.NO_TIMESTAMP);
            builder.appendWithOffset(offset, timestamp, nullableBase64(r.get("key")), nullableBase64(r.get("value")), headers);
            offset++;
        }
        answer.put("bytes", Base64.getEncoder().encodeToString(toArray(builder.build().buffer())));
    }

    private void recordsControl(JsonNode request, ObjectNode answer) {
        ControlRecordType type = "commit".equals(request.path("marker").asText())
            ? ControlRecordType.COMMIT : ControlRecordType.ABORT;
        MemoryRecords records = MemoryRecords.withEndTransactionMarker(
            request.path("baseOffset").asLong(0),
            request.path("timestamp").asLong(),
            request.path("partitionLeaderEpoch").asInt(RecordBatch.NO_PARTITION_LEADER_EPOCH),
            request.path("producerId").asLong(),
            (short) request.path("producerEpoch").asInt(),
            new EndTransactionMarker(type, request.path("coordinatorEpoch").asInt()));
        answer.put("bytes", Base64.getEncoder().encodeToString(toArray(records.buffer())));
    }

    private static byte[] toArray(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return bytes;
    }

    private static String nullableBase64(ByteBuffer b) {
        return b == null ? null : Base64.getEncoder().encodeToString(toArray(b));
    }

    private void recordsValidate(JsonNode request, ObjectNode answer) {
        byte[] bytes = Base64.getDecoder().decode(request.get("bytes").asText());
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(bytes));
        ArrayNode batches = answer.putArray("batches");
        int validBytes = 0;
        for (MutableRecordBatch batch : records.batches()) {
            batch.ensureValid();
            ObjectNode b = batches.addObject();
            b.put("baseOffset", Long.toString(batch.baseOffset()));
            b.put("lastOffset", Long.toString(batch.lastOffset()));
            b.put("magic", batch.magic());
            b.put("codec", batch.compressionType().name);
            b.put("timestampType", batch.timestampType().name);
            b.put("maxTimestamp", Long.toString(batch.maxTimestamp()));
            b.put("isTransactional", batch.isTransactional());
            b.put("isControl", batch.isControlBatch());
            b.put("producerId", Long.toString(batch.producerId()));
            b.put("producerEpoch", batch.producerEpoch());
            b.put("baseSequence", batch.baseSequence());
            b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            b.put("sizeInBytes", batch.sizeInBytes());
            if (batch.countOrNull() != null) b.put("recordCount", batch.countOrNull());
            ArrayNode out = b.putArray("records");
            Iterator<Record> it = batch.iterator();
            while (it.hasNext()) {
                Record record = it.next();
                record.ensureValid();
                ObjectNode r = out.addObject();
                r.put("offset", Long.toString(record.offset()));
                r.put("timestamp", Long.toString(record.timestamp()));
                r.put("key", nullableBase64(record.key()));
                r.put("value", nullableBase64(record.value()));
                ArrayNode headers = r.putArray("headers");
                for (Header h : record.headers()) {
                    ObjectNode hn = headers.addObject();
                    hn.put("key", h.key());
                    hn.put("value", h.value() == null ? null : Base64.getEncoder().encodeToString(h.value()));
                }
            }
            validBytes += batch.sizeInBytes();
        }
        answer.put("validBytes", validBytes);
        answer.put("totalBytes", bytes.length);
    }
}
