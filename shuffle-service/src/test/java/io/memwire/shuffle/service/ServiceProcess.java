package io.memwire.shuffle.service;

import io.memwire.transfer.TransferNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;

/**
 * The service's launcher in a child JVM, on the classpath bin/memwire gives it (the service's
 * classes, shuffle-service-client, block-transfer, SLF4J, and with {@code withServiceLib} the jars
 * of target/service-lib/: the Prometheus client and RocksDB).
 */
final class ServiceProcess {
  private ServiceProcess() {}

  private static String jarOf(Class<?> c) throws Exception {
    return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
  }

  /** The launcher's command line with {@code --conf PREFIX+kv} for each of {@code conf}. */
  static List<String> command(boolean withServiceLib, List<String> conf) throws Exception {
    List<String> cp = new ArrayList<>();
    cp.add(jarOf(ServiceLauncher.class));
    cp.add(jarOf(TransferNode.class));
    cp.add(jarOf(io.memwire.shuffle.protocol.ServiceProtocol.class));
    cp.add(jarOf(LoggerFactory.class));
    cp.add(jarOf(Class.forName("org.slf4j.simple.SimpleLogger")));
    if (withServiceLib) {
      cp.add(Path.of("target", "service-lib").toAbsolutePath() + File.separator + "*");
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, cp));
    cmd.add(ServiceLauncher.class.getName());
    for (String kv : conf) {
      cmd.add("--conf");
      cmd.add(ServiceSettings.PREFIX + kv);
    }
    return cmd;
  }

  /** Every line the child prints (stdout and stderr merged), as it prints them. */
  static BlockingQueue<String> follow(Process p) {
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread t =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                  lines.add(line);
                }
              } catch (IOException ignored) {
                // the child is gone
              }
            },
            "launcher-test-output");
    t.setDaemon(true);
    t.start();
    return lines;
  }

  /**
   * Waits up to 90 s for the first line matching {@code pattern}; fails with every line seen.
   *
   * @return the match
   */
  static Matcher await(BlockingQueue<String> lines, String pattern) throws InterruptedException {
    List<String> seen = new ArrayList<>();
    Pattern p = Pattern.compile(pattern);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < end) {
      String line = lines.poll(1, TimeUnit.SECONDS);
      if (line != null) {
        seen.add(line);
        Matcher m = p.matcher(line);
        if (m.find()) {
          return m;
        }
      }
    }
    throw new AssertionError("no line matching " + pattern + ": " + seen);
  }
}
