package io.memwire.shuffle.it;

import io.memwire.shuffle.service.ServiceConfig;
import io.memwire.shuffle.service.ShuffleService;
import io.memwire.shuffle.service.protocol.ServiceClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(ShuffleService.class.getName());
    cmd.add("--conf");
    cmd.add(ServiceConfig.PREFIX + "socket=" + socket);
    cmd.add("--conf");
    cmd.add(ServiceConfig.PREFIX + "dir=" + root.resolve("outputs"));
    cmd.add("--conf");
    cmd.add(ServiceConfig.TRANSFER_PREFIX + "provider=tcp");
    cmd.add("--conf");
    cmd.add(ServiceConfig.TRANSFER_PREFIX + "bindAddress=127.0.0.1");
    conf.forEach(
        (k, v) -> {
          cmd.add("--conf");
          cmd.add(k + "=" + v);
        });
    Files.createDirectories(root);
    int n = 1;
    while (Files.exists(root.resolve("service-" + n + ".log"))) {
      n++;
    }
    Path log = root.resolve("service-" + n + ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    CompletableFuture<Void> ready = new CompletableFuture<>();
    Thread drain =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  Files.writeString(
                      log,
                      line + "\n",
                      StandardCharsets.UTF_8,
                      StandardOpenOption.CREATE,
                      StandardOpenOption.APPEND);
                  if (line.startsWith("memwire shuffle service ready")) {
                    ready.complete(null);
                  }
                }
              } catch (IOException e) {
                ready.completeExceptionally(e);
              }
              ready.completeExceptionally(new IOException("service exited; see " + log));
            },
            "service-process-output");
    drain.setDaemon(true);
    drain.start();
    try {
      ready.get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IOException("shuffle service did not start: " + e + "; see " + log, e);
    }
    return new ServiceProcess(p, socket);
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
