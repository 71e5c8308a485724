package io.memwire.shuffle.it;

import io.memwire.localcluster.ProcessLines;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A main class of the test classpath in a JVM of its own, its output appended to a log file; {@link
 * #start} returns once the program printed a line starting with a given marker.
 */
public final class ChildJvm {
  final Process process;

  /** The marker line the program printed. */
  final String readyLine;

  private ChildJvm(Process process, String readyLine) {
    this.process = process;
    this.readyLine = readyLine;
  }

  /**
   * Starts {@code mainClass} with {@code jvmOptions} and {@code args}; waits up to {@code timeout}
   * for a line starting with {@code ready}.
   *
   * @throws IOException when the program exits or stays silent first (the log's path is named)
   */
  static ChildJvm start(
      List<String> jvmOptions,
      String mainClass,
      List<String> args,
      String ready,
      Path log,
      Duration timeout)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    Files.createDirectories(log.getParent());
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    CompletableFuture<String> seen = drainTo(p, log, ready, mainClass);
    try {
      return new ChildJvm(p, seen.get(timeout.toMillis(), TimeUnit.MILLISECONDS));
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IOException(mainClass + " did not get ready: " + e + "; see " + log, e);
    }
  }

  /**
   * Appends the process's output to {@code log} on a daemon thread; the future completes with the
   * first line starting with {@code ready} (never when {@code ready} is null) and fails when the
   * output ends first.
   */
  public static CompletableFuture<String> drainTo(Process p, Path log, String ready, String what) {
    CompletableFuture<String> seen = new CompletableFuture<>();
    ProcessLines.follow(
        p,
        "child-jvm-output",
        line -> {
          Files.writeString(
              log,
              line + "\n",
              StandardCharsets.UTF_8,
              StandardOpenOption.CREATE,
              StandardOpenOption.APPEND);
          if (ready != null && line.startsWith(ready)) {
            seen.complete(line);
          }
        },
        failure ->
            seen.completeExceptionally(
                failure != null ? failure : new IOException(what + " exited; see " + log)));
    return seen;
  }

  /** SIGKILL, and wait for the exit. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }
}
