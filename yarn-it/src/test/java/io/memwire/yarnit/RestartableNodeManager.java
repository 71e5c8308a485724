package io.memwire.yarnit;

import io.memwire.shuffle.protocol.ServiceClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;

/**
 * A NodeManager of its own beside a {@code MiniYARNCluster}'s ResourceManager, running Memwire's
 * aux service, with NodeManager recovery on, that can be restarted. {@code MiniYARNCluster} cannot
 * restart its NodeManagers and gives them an ephemeral port, which recovery refuses; a stopped
 * Hadoop service cannot start again. So {@link #restart} stops this NodeManager and starts a new
 * {@link NodeManager} with the same configuration: same port (the ResourceManager sees the same
 * node come back), same recovery directory (the NodeManager's state store and the aux service's
 * recovery store under it), same local directories, socket and resolve port.
 *
 * <p>Recovery is supervised ({@code yarn.nodemanager.recovery.supervised}), as under a process
 * supervisor in production: a stop keeps the node's applications instead of ending them, so the aux
 * service gets no {@code stopApplication} and keeps its outputs.
 *
 * <p>The NodeManager's state store is LevelDB, which {@code hadoop-client-minicluster} refers to
 * under relocated names but does not carry; the test sources supply those names ({@code
 * org.apache.hadoop.shaded.org.fusesource.leveldbjni.JniDBFactory}), backed by a file.
 */
final class RestartableNodeManager implements AutoCloseable {
  private final YarnConfiguration conf;
  private final Path socket;
  private final int port;
  private NodeManager nm;
  private int starts;

  private RestartableNodeManager(YarnConfiguration conf, Path socket, int port) {
    this.conf = conf;
    this.socket = socket;
    this.port = port;
  }

  /**
   * Starts a NodeManager registering with the ResourceManager of {@code rmConf} (a started {@code
   * MiniYARNCluster}'s configuration), with {@code memoryMb} for containers, its directories under
   * {@code root}, and Memwire's aux service from {@code auxJar} with {@code serviceConf} on top.
   */
  static RestartableNodeManager start(
      Configuration rmConf, Path root, int memoryMb, Path auxJar, Map<String, String> serviceConf)
      throws IOException {
    YarnConfiguration conf = new YarnConfiguration(rmConf);
    Path socket = root.resolve("run/memwire-shuffle.sock");
    Files.createDirectories(socket.getParent());
    // Under target/, beside the local dirs: the service takes outputs over by hard link.
    MiniYarn.addAuxService(
        conf, auxJar, socket, root.resolve("memwire-shuffle-service"), serviceConf);
    conf.set(YarnConfiguration.NM_LOCAL_DIRS, dir(root, "nm-local"));
    conf.set(YarnConfiguration.NM_LOG_DIRS, dir(root, "nm-logs"));
    int port = freePort();
    // A fixed port: recovery refuses an ephemeral one, and the restarted NodeManager must be the
    // same node for the ResourceManager.
    conf.set(YarnConfiguration.NM_ADDRESS, "localhost:" + port);
    conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, "localhost:" + freePort());
    conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, "localhost:0");
    conf.setBoolean(YarnConfiguration.NM_RECOVERY_ENABLED, true);
    conf.set(YarnConfiguration.NM_RECOVERY_DIR, dir(root, "nm-recovery"));
    conf.setBoolean(YarnConfiguration.NM_RECOVERY_SUPERVISED, true);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, memoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, 4);
    RestartableNodeManager r = new RestartableNodeManager(conf, socket, port);
    r.startNew();
    return r;
  }

  private static String dir(Path root, String name) throws IOException {
    return Files.createDirectories(root.resolve(name)).toAbsolutePath().toString();
  }

  /** A port free on loopback now. */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private void startNew() {
    NodeManager fresh = new NodeManager();
    // A copy: services write into the configuration they are given.
    fresh.init(new YarnConfiguration(conf));
    fresh.start();
    if (fresh.getServiceState() != Service.STATE.STARTED) {
      throw new IllegalStateException(
          "NodeManager start " + (starts + 1) + " failed", fresh.getFailureCause());
    }
    nm = fresh;
    starts++;
  }

  /**
   * Stops this NodeManager (its aux service keeps its outputs in its recovery store) and starts a
   * new one with the same configuration, which recovers its applications and the aux service's
   * outputs. Returns once the new NodeManager has registered with the ResourceManager.
   */
  void restart() {
    nm.stop();
    startNew();
  }

  /** The node's id as the ResourceManager knows it. */
  NodeId nodeId() {
    return nm.getNMContext().getNodeId();
  }

  /**
   * Whether the running NodeManager knows application {@code appId}: one of its containers was
   * started here, or, after a {@link #restart}, recovered from the state store; until YARN reports
   * the application finished.
   */
  boolean knowsApplication(String appId) {
    return nm.getNMContext().getApplications().keySet().stream()
        .anyMatch(id -> id.toString().equals(appId));
  }

  /** How many NodeManagers were started: 1 before the first {@link #restart}. */
  int starts() {
    return starts;
  }

  /** The fixed port every instance listens on. */
  int port() {
    return port;
  }

  /** The aux service's socket, which executors must be given. */
  Path socket() {
    return socket;
  }

  /** The aux service's counters, asked over its socket. */
  Map<String, Long> serviceStats() {
    try {
      return ServiceClient.stats(socket, Duration.ofSeconds(10));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Stops the running NodeManager. */
  @Override
  public void close() {
    if (nm != null) {
      nm.stop();
    }
  }
}
