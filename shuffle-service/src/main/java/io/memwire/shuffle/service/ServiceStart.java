package io.memwire.shuffle.service;

import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link ShuffleService} starts, in order: its private directories checked or created, the
 * recovery store opened, the output limit fitted to the process's limits, the transfer node
 * started, the socket bound (served only once recovered), the HTTP endpoint up, what the store
 * records taken back, then executors served. Whatever fails on the way is closed again and the
 * start fails.
 */
final class ServiceStart {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceStart.class);

  /** Open files and memory mappings kept free for everything but held outputs. */
  private static final long RESERVED_FILES = 1024;

  private static final long RESERVED_MAPPINGS = 4096;

  private ServiceStart() {}

  /**
   * See {@link ShuffleService#start(ServiceConfig)}; {@code whileRecovering} runs before recovery.
   */
  static ShuffleService start(ServiceConfig configured, Consumer<ShuffleService> whileRecovering)
      throws IOException {
    // The node's output limit as the process's limits allow; the shares not set follow it.
    ServiceConfig config = configured.withMaxOutputs(fitOutputs(configured.nodeQuota().outputs()));
    Path socket = config.socket();
    // Outputs: only the service. Socket: other users must reach it when they may connect.
    TrustedPaths.prepareDirectory(
        config.dir(),
        PosixFilePermissions.fromString("rwx------"),
        ServiceSettings.PREFIX + ServiceSettings.DIR.name());
    TrustedPaths.prepareDirectory(
        socket.getParent(),
        PosixFilePermissions.fromString(config.multiUser() ? "rwxr-xr-x" : "rwx------"),
        ServiceSettings.PREFIX + ServiceSettings.SOCKET.name());
    if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      if (answers(socket)) {
        throw new IllegalStateException("another shuffle service listens on " + socket);
      }
      Files.delete(socket); // left by a service that died; its directory is the service's own
    }
    Path apps = config.dir().resolve("apps");
    TrustedPaths.prepareDirectory(
        apps,
        PosixFilePermissions.fromString("rwx------"),
        ServiceSettings.PREFIX + ServiceSettings.DIR.name());
    RecoveryStores.Opened store = RecoveryStores.open(config, apps);
    long maxOutputs = config.nodeQuota().outputs();
    TransferNode node;
    ServerSocketChannel server;
    try {
      node = TransferNode.start(config.transfer());
    } catch (RuntimeException e) {
      store.log().close();
      throw e;
    }
    try {
      // Bound now, served once recovered: executors that connect meanwhile wait in the backlog.
      server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(socket), 128);
      Files.setPosixFilePermissions(
          socket, PosixFilePermissions.fromString(config.multiUser() ? "rw-rw-rw-" : "rw-------"));
    } catch (IOException | RuntimeException e) {
      node.close();
      store.log().close();
      throw e;
    }
    ShuffleService s =
        new ShuffleService(config, node, server, maxOutputs, store.log(), whileRecovering);
    store.lost().forEach(why -> s.storeLost());
    startHttp(s, config);
    s.recover(store);
    if (config.resolvePort().isPresent()) {
      try {
        s.resolve(
            ResolveListener.start(
                node.localAddress().getAddress(),
                config.resolvePort().getAsInt(),
                s.resolver(),
                config.frameTimeout()));
      } catch (IOException | RuntimeException e) {
        s.close();
        throw e;
      }
    }
    long refusedGrace = s.serve();
    LOG.info(
        "Memwire shuffle service: socket {}, outputs in {}, provider {} because {}; endpoint {}; "
            + "applications end {} ms after their driver stops answering, {} ms after its port "
            + "starts refusing connections; at most {} outputs held; per user {}, per "
            + "application {}",
        socket,
        config.dir(),
        node.provider(),
        node.selectionReason(),
        node.localAddress(),
        config.appTimeout().toMillis(),
        TimeUnit.NANOSECONDS.toMillis(refusedGrace),
        maxOutputs,
        config.userQuota(),
        config.applicationQuota());
    if (s.httpPort() >= 0) {
      LOG.info(
          "shuffle service HTTP endpoint on {}:{}: /metrics, /health, /health/ready",
          config.httpHost(),
          s.httpPort());
    }
    return s;
  }

  /** Starts the HTTP endpoint when {@code http.port} is set (before recovery: it shows it). */
  private static void startHttp(ShuffleService s, ServiceConfig config) throws IOException {
    if (config.httpPort().isPresent()) {
      try {
        s.http(ServiceHttp.start(s, config.httpHost(), config.httpPort().getAsInt()));
      } catch (IOException | RuntimeException e) {
        s.close();
        throw e;
      } catch (LinkageError e) {
        s.close();
        throw missingJars(ServiceSettings.HTTP_PORT, "the Prometheus client", e);
      }
    }
  }

  /**
   * The error of a setting that needs jars of target/service-lib/ ({@code what}) which this process
   * cannot load.
   */
  static TransferConfigException missingJars(
      io.memwire.transfer.settings.Setting<?> setting, String what, LinkageError e) {
    String key = ServiceSettings.PREFIX + setting.name();
    return new TransferConfigException(
        TransferConfigException.Problem.UNUSABLE,
        key,
        key
            + " is set but "
            + what
            + " cannot be loaded ("
            + e
            + "): run the service with bin/memwire, or put shuffle-service/target/service-lib/"
            + "*.jar on its classpath, or leave the key unset");
  }

  /**
   * Lowers the configured output limit to what this process's open-file limit and the kernel's
   * mapping limit leave room for: each held output keeps two files open and two mappings.
   */
  static long fitOutputs(long configured) {
    long fit = configured;
    String why = null;
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.UnixOperatingSystemMXBean os) {
      long byFiles = (os.getMaxFileDescriptorCount() - RESERVED_FILES) / 2;
      if (byFiles < fit) {
        fit = Math.max(1, byFiles);
        why = "the open-file limit of " + os.getMaxFileDescriptorCount();
      }
    }
    // Not Files.readString: it trusts the size procfs reports and may return part of the line.
    try (java.io.BufferedReader r =
        Files.newBufferedReader(Path.of("/proc/sys/vm/max_map_count"))) {
      long maps = Long.parseLong(String.valueOf(r.readLine()).trim());
      long byMaps = (maps - RESERVED_MAPPINGS) / 2;
      if (byMaps < fit) {
        fit = Math.max(1, byMaps);
        why = "vm.max_map_count " + maps;
      }
    } catch (IOException | NumberFormatException e) {
      LOG.debug("cannot read vm.max_map_count: {}", e.toString());
    }
    if (why != null) {
      LOG.info(
          "at most {} map outputs held (not {}): each keeps two files open and two mappings, and "
              + "{} leaves room for no more; raise it to hold more",
          fit,
          configured,
          why);
    }
    return fit;
  }

  private static boolean answers(Path socket) {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
