package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.client;
import static io.memwire.shuffle.service.ServiceFixture.token;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ResolveClient;
import io.memwire.shuffle.protocol.ServiceClient;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;

/**
 * A service with a recovery store and a resolve port that a test stops and starts again (new region
 * keys each time), with the executor and RESOLVE calls a re-resolve test makes. Shared by {@link
 * ResolveTest} (tcp) and {@link VerbsShuffleServiceTest} (verbs).
 */
final class RestartingService implements AutoCloseable {
  private final Path root;
  private final String[] providerConf;
  private final int driverPort;
  private ShuffleService service;

  /**
   * @param providerConf the service's transfer keys, as key/value pairs
   * @param driverPort a port that accepts connections, standing in for the driver
   */
  RestartingService(Path root, String[] providerConf, int driverPort) {
    this.root = root;
    this.providerConf = providerConf.clone();
    this.driverPort = driverPort;
  }

  /** Starts the service (recovery store and resolve port under {@code root}). */
  ShuffleService start() throws IOException {
    String[] all =
        Stream.concat(
                Stream.of(providerConf),
                Stream.of(
                    ServiceSettings.PREFIX + "recoveryPath",
                    root.resolve("recovery").toString(),
                    ServiceSettings.PREFIX + "resolvePort",
                    "0"))
            .toArray(String[]::new);
    service = ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root, all)));
    return service;
  }

  /** Stops the service and starts it again: its outputs come back under new region keys. */
  ShuffleService restart() throws IOException {
    service.close();
    return start();
  }

  /** The running service. */
  ShuffleService service() {
    return service;
  }

  /** An executor of {@code app} registered with the token of {@code tokenSeed}. */
  ServiceClient executor(String app, int tokenSeed) throws IOException {
    return client(service.socket(), app, "1", token(tokenSeed), driverPort);
  }

  /** One RESOLVE of {@code old} on the resolve port of the node {@code old} names. */
  DirectoryPointer resolve(String app, int tokenSeed, int shuffleId, DirectoryPointer old)
      throws IOException {
    InetSocketAddress at =
        new InetSocketAddress(old.region().node().getAddress(), service.resolvePort());
    return ResolveClient.resolve(at, app, token(tokenSeed), shuffleId, old, Duration.ofSeconds(5));
  }

  @Override
  public void close() {
    if (service != null) {
      service.close();
    }
  }
}
