package io.memwire.shuffle.it;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.service.ServiceLauncher;
import io.memwire.shuffle.service.ServiceSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** A Memwire shuffle service in its own JVM, as {@code bin/memwire shuffle-service} runs it. */
public final class ServiceProcess implements AutoCloseable {
  private final Process process;
  private final Path socket;

  private ServiceProcess(Process process, Path socket) {
    this.process = process;
    this.socket = socket;
  }

  /**
   * Starts a service with its socket and directory under {@code root}, tcp on loopback, and {@code
   * conf} on top; returns once it prints its ready line (60 s at most). Output goes to {@code
   * root/service-N.log}.
   */
  public static ServiceProcess start(Path root, Map<String, String> conf) throws IOException {
    Path socket = root.resolve("socket/service.sock");
    List<String> args = new ArrayList<>();
    Map<String, String> all = new java.util.LinkedHashMap<>();
    all.put(ServiceSettings.PREFIX + "socket", socket.toString());
    all.put(ServiceSettings.PREFIX + "dir", root.resolve("outputs").toString());
    all.put(ServiceSettings.TRANSFER_PREFIX + "provider", "tcp");
    all.put(ServiceSettings.TRANSFER_PREFIX + "bindAddress", "127.0.0.1");
    all.putAll(conf);
    all.forEach(
        (k, v) -> {
          args.add("--conf");
          args.add(k + "=" + v);
        });
    int n = 1;
    while (Files.exists(root.resolve("service-" + n + ".log"))) {
      n++;
    }
    ChildJvm jvm =
        ChildJvm.start(
            List.of("-Xmx256m", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED"),
            ServiceLauncher.class.getName(),
            args,
            "memwire shuffle service ready",
            root.resolve("service-" + n + ".log"),
            Duration.ofSeconds(60));
    return new ServiceProcess(jvm.process, socket);
  }

  /** The Unix domain socket executors hand their outputs to. */
  public Path socket() {
    return socket;
  }

  /** The service JVM's process id. */
  public long pid() {
    return process.pid();
  }

  /** The service's counters, asked over its socket. */
  public Map<String, Long> stats() {
    try {
      return ServiceClient.stats(socket, Duration.ofSeconds(10));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** SIGKILL, as a crashed service: nothing cleaned up. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** SIGTERM: the service's shutdown hook deletes what it held. */
  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }
}
