package io.memwire.localcluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Follows a child process's output (UTF-8) line by line on a daemon thread of its own: the one way
 * the launchers and tests here read the JVMs they start.
 */
public final class ProcessLines {
  private ProcessLines() {}

  /** What to do with one line; an exception ends the reading. */
  @FunctionalInterface
  public interface Handler {
    void line(String line) throws IOException;
  }

  /**
   * Starts the daemon thread {@code threadName}, which hands every line of {@code process}'s
   * standard output to {@code handler} and, once the output ends, calls {@code atEnd} on that
   * thread with the exception that ended the reading, or null at the end of the output.
   */
  public static Thread follow(
      Process process, String threadName, Handler handler, Consumer<IOException> atEnd) {
    Thread t =
        new Thread(
            () -> {
              IOException failure = null;
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  handler.line(line);
                }
              } catch (IOException e) {
                failure = e;
              }
              atEnd.accept(failure);
            },
            threadName);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
