import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's command-line tools in one long-lived JVM, as the bin/ scripts would run each in
 * its own (the protocol of compat/platformatic/rpc.ts, as compat/clients/resident-process.ts
 * speaks it): each stdin line {@code {"id": 1, "method": MAIN_CLASS, "args": [{"args": [...]}]}}
 * runs MAIN_CLASS.main(args) on a thread of its own and is answered on stdout with
 * {@code {"id": 1, "result": {"code", "stdout", "stderr"}}}. Kafka's Exit procedures take the
 * exit status and stop the thread that asked for it where it stands, as the JVM's exit would
 * (no catch or finally of the tool runs after it); a tool that returns exits with 0. System.out
 * and System.err are the command's own while it runs, so commands run one at a time. It exits
 * at the end of stdin.
 */
public final class ToolHost {
  private static final ObjectMapper JSON = new ObjectMapper();

  // The exit status of the command a thread belongs to; the threads a tool starts inherit it.
  private static final InheritableThreadLocal<CompletableFuture<Integer>> COMMAND = new InheritableThreadLocal<>();

  /** A stream whose target moves to each command's buffer, so that whatever kept it (log4j's
   *  console appender, Scala's Console) writes to the running command. */
  private static final class Redirect extends OutputStream {
    private volatile OutputStream target;

    Redirect(OutputStream target) {
      this.target = target;
    }

    @Override
    public void write(int b) throws IOException {
      target.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      target.write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      target.flush();
    }
  }

  public static void main(String[] args) throws Exception {
    PrintStream replies = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    OutputStream jvmErr = new FileOutputStream(FileDescriptor.err);
    PrintStream log = new PrintStream(jvmErr, true, StandardCharsets.UTF_8);
    Redirect out = new Redirect(jvmErr);
    Redirect err = new Redirect(jvmErr);
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    Exit.setExitProcedure((code, message) -> exit(code));
    Exit.setHaltProcedure((code, message) -> exit(code));
    // A tool's shutdown hook would run only when this JVM ends, long after its command.
    Exit.setShutdownHookAdder((name, hook) -> { });
    BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = requests.readLine(); line != null; line = requests.readLine()) {
      if (line.isBlank()) continue;
      JsonNode request;
      try {
        request = JSON.readTree(line);
      } catch (JsonProcessingException error) {
        request = null;
      }
      if (request == null || !request.path("id").isNumber() || !request.path("method").isTextual()) {
        log.println("ToolHost: not a request: " + line);
        continue;
      }
      ByteArrayOutputStream stdout = new ByteArrayOutputStream();
      ByteArrayOutputStream stderr = new ByteArrayOutputStream();
      out.target = stdout;
      err.target = stderr;
      int code;
      try {
        code = run(request.get("method").asText(), request.path("args").path(0).path("args"));
      } finally {
        System.out.flush();
        System.err.flush();
        out.target = jvmErr;
        err.target = jvmErr;
      }
      ObjectNode reply = JSON.createObjectNode().put("id", request.get("id").asLong());
      reply.putObject("result")
          .put("code", code)
          .put("stdout", stdout.toString(StandardCharsets.UTF_8))
          .put("stderr", stderr.toString(StandardCharsets.UTF_8));
      replies.println(JSON.writeValueAsString(reply));
    }
    System.exit(0);
  }

  private static void exit(int code) {
    CompletableFuture<Integer> command = COMMAND.get();
    if (command == null) System.exit(code);
    command.complete(code);
    while (true) LockSupport.park();
  }

  /** The exit status the JVM would have had: the tool's, 1 for an exception it let escape. */
  private static int run(String mainClass, JsonNode argsNode) throws InterruptedException, ExecutionException {
    List<String> args = new ArrayList<>();
    for (JsonNode a : argsNode) args.add(a.asText());
    CompletableFuture<Integer> status = new CompletableFuture<>();
    Thread main = new Thread(() -> {
      COMMAND.set(status);
      try {
        Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args.toArray(new String[0]));
        status.complete(0);
      } catch (InvocationTargetException error) {
        System.err.print("Exception in thread \"main\" ");
        error.getCause().printStackTrace();
        status.complete(1);
      } catch (ReflectiveOperationException error) {
        System.err.println("Error: Could not find or load main class " + mainClass + ": " + error);
        status.complete(1);
      }
    }, "main");
    // A thread stopped by its tool's exit stays parked: it must not hold the JVM at the end.
    main.setDaemon(true);
    main.start();
    return status.get();
  }
}
