package io.memwire.shuffle.service;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The command line of the shuffle service ({@code memwire shuffle-service}): reads the settings,
 * starts a {@link ShuffleService}, prints its ready line and serves until the JVM is stopped
 * (SIGTERM runs {@link ShuffleService#close} from a shutdown hook).
 */
public final class ServiceLauncher {
  private ServiceLauncher() {}

  /**
   * Runs a service until the JVM is stopped: {@code [--properties-file FILE] [--conf key=value
   * ...]}; system properties under {@value ServiceConfig#PREFIX} count too, {@code --conf} wins.
   * Prints one line {@code memwire shuffle service ready: ...} once it serves (ending in {@code
   * http=HOST:PORT} when the HTTP endpoint is on).
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>();
    System.getProperties()
        .forEach(
            (k, v) -> {
              if (k.toString().startsWith(ServiceSettings.PREFIX)) {
                props.put(k.toString(), v.toString());
              }
            });
    List<String> rest = List.of(args);
    for (int i = 0; i < rest.size(); i++) {
      String a = rest.get(i);
      if (a.equals("--properties-file") && i + 1 < rest.size()) {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(Path.of(rest.get(++i)))) {
          p.load(in);
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read " + rest.get(i), e);
        }
        p.forEach((k, v) -> props.put(k.toString(), v.toString().trim()));
      } else if (a.equals("--conf") && i + 1 < rest.size()) {
        String kv = rest.get(++i);
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          System.err.println("memwire shuffle-service: --conf takes key=value, got " + kv);
          System.exit(2);
        }
        props.put(kv.substring(0, eq), kv.substring(eq + 1));
      } else {
        System.err.println(
            "usage: memwire shuffle-service [--properties-file FILE] [--conf key=value ...]");
        System.exit(2);
      }
    }
    ServiceConfig config;
    try {
      config = ServiceConfig.fromProperties(props);
    } catch (IllegalArgumentException e) {
      System.err.println("memwire shuffle-service: " + e.getMessage());
      System.exit(2);
      return;
    }
    ShuffleService service;
    try {
      service = ShuffleService.start(config);
    } catch (IllegalArgumentException e) {
      // A setting this process cannot honour (the HTTP endpoint without its jars, say).
      System.err.println("memwire shuffle-service: " + e.getMessage());
      System.exit(2);
      return;
    }
    Runtime.getRuntime()
        .addShutdownHook(new Thread(service::close, "memwire-shuffle-service-shutdown"));
    System.out.println(
        "memwire shuffle service ready: socket="
            + service.socket()
            + " endpoint="
            + service.node().localAddress().getAddress().getHostAddress()
            + ":"
            + service.node().localAddress().getPort()
            + " provider="
            + service.node().provider()
            + (service.httpPort() < 0
                ? ""
                : " http=" + config.httpHost() + ":" + service.httpPort()));
    System.out.flush();
    service.awaitStop();
  }
}
