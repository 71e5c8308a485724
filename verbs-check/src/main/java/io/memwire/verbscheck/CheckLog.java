package io.memwire.verbscheck;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * The results file of the Spark check: {@code key=value} lines written as they come (a crash leaves
 * what was measured), the verdicts among them as {@code check.NAME=PASS|FAIL}, and how many checks
 * failed.
 */
final class CheckLog {
  private final Path out;

  @GuardedBy("this")
  private int failures;

  CheckLog(Path out) {
    this.out = out;
  }

  /** How many verdicts so far were FAIL. */
  synchronized int failures() {
    return failures;
  }

  /** Prints {@code key=value} and appends it to the results file at once. */
  synchronized void put(String key, Object value) {
    String line = key + "=" + String.valueOf(value).replace('\n', ' ') + "\n";
    System.out.print("spark-check " + line);
    try {
      Files.writeString(out, line, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A check's verdict ({@code check.NAME=PASS|FAIL}) and what it saw ({@code detail.NAME}). */
  synchronized void verdict(String name, boolean ok, String detail) {
    put("check." + name, ok ? "PASS" : "FAIL");
    if (detail != null && !detail.isEmpty()) {
      put("detail." + name, detail);
    }
    if (!ok) {
      failures++;
    }
  }

  /** A step of the check, which may throw. */
  interface Step {
    void run() throws Exception;
  }

  /** Runs one step; an exception is that step's failure, not the end of the whole check. */
  void step(String name, Step s) {
    long t0 = System.nanoTime();
    try {
      s.run();
    } catch (Throwable e) {
      e.printStackTrace();
      verdict(name, false, e.toString());
    } finally {
      put("seconds." + name, String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    }
  }
}
