package io.memwire.mainjob;

import io.memwire.localcluster.ProcessLines;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One configuration's application, up for all rounds: its output is relayed with a tag by a daemon
 * thread; a line on its standard input starts its next round, end of input ends it.
 */
final class Submission {
  private final Process process;
  private final Thread pump;
  private final java.io.Writer input;

  private Submission(Process process, Thread pump) {
    this.process = process;
    this.pump = pump;
    this.input = new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
  }

  static Submission start(List<String> cmd, Path sparkHome, String tag) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("SPARK_HOME", sparkHome.toAbsolutePath().toString());
    pb.environment().put("SPARK_SCALA_VERSION", SparkSubmitCommand.scalaVersion(sparkHome));
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    // Read by UCX when it loads (ucx configurations): it must leave the JVM's signals alone.
    pb.environment().put("UCX_ERROR_SIGNALS", "");
    Process p = pb.start();
    Thread pump =
        ProcessLines.follow(
            p,
            "main-job-output-" + tag,
            line -> System.out.println("  [" + tag + "] " + line),
            ended -> {}); // the output ends with the process
    return new Submission(p, pump);
  }

  void nextRound() throws IOException {
    input.write("next\n");
    input.flush();
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** Waits for {@code file} while the application runs; false if it exited or time ran out. */
  boolean awaitFile(Path file, long timeoutMinutes) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(timeoutMinutes);
    while (!Files.exists(file)) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        return Files.exists(file);
      }
      process.waitFor(100, TimeUnit.MILLISECONDS);
    }
    return true;
  }

  /** Ends its input and waits for it to exit; its exit status (124 after the timeout). */
  int finish(long timeoutMinutes) throws IOException, InterruptedException {
    input.close();
    if (!process.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
      return 124;
    }
    pump.join(10_000);
    return process.exitValue();
  }

  /** Stops it and everything it started, if still running. */
  void kill() {
    if (process.isAlive()) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
    }
  }
}
