package io.memwire.yarnit;

import io.memwire.shuffle.protocol.ServiceClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A ResourceManager and one NodeManager in this JVM (Hadoop's {@link MiniYARNCluster}), the
 * NodeManager running Memwire's auxiliary service from its packaged jar in its own class loader, as
 * {@code yarn-site.xml} sets it up on a real node (yarn-shuffle-service's README).
 */
final class MiniYarn implements AutoCloseable {
  /** The aux service's name and class, as an operator configures them. */
  static final String AUX_NAME = "memwire_shuffle";

  static final String AUX_CLASS = "io.memwire.shuffle.yarn.MemwireYarnShuffleService";

  /**
   * The memory of {@link #startForApplicationMasters}' NodeManager: a Spark application master of
   * 512 MB heap and 384 MB overhead fits, an executor of the same size beside it does not.
   */
  static final int AM_NODE_MB = 1024;

  private final MiniYARNCluster cluster;
  private final Path socket;
  private final Path serviceDir;

  private MiniYarn(MiniYARNCluster cluster, Path socket, Path serviceDir) {
    this.cluster = cluster;
    this.socket = socket;
    this.serviceDir = serviceDir;
  }

  /**
   * Starts the cluster with the aux service jar {@code auxJar}, its socket and directory under
   * {@code root}, tcp on loopback, and {@code serviceConf} (more {@code memwire.shuffle.service.*}
   * keys) on top. Returns once the NodeManager has registered with the ResourceManager.
   */
  static MiniYarn start(Path root, Path auxJar, Map<String, String> serviceConf)
      throws IOException, InterruptedException {
    Path socket = root.resolve("run/memwire-shuffle.sock");
    // Under target/, like the NodeManager's local dirs (MiniYARNCluster puts them in
    // target/<name>): the service takes outputs over by hard link, so one filesystem.
    Path serviceDir = root.resolve("memwire-shuffle-service");
    Files.createDirectories(socket.getParent());

    YarnConfiguration conf = baseConf();
    addAuxService(conf, auxJar, socket, serviceDir, serviceConf);
    // Room for the application master and two executors of 512 MB heap + 384 MB overhead.
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
    conf.setInt(YarnConfiguration.NM_VCORES, 4);
    return new MiniYarn(startCluster("memwire-yarn-it", conf), socket, serviceDir);
  }

  /**
   * Starts a ResourceManager and a NodeManager without Memwire's aux service and with room for a
   * Spark application master but no executor beside it ({@link #AM_NODE_MB}): the executors go to a
   * NodeManager started separately ({@link RestartableNodeManager}).
   */
  static MiniYARNCluster startForApplicationMasters(String name) throws InterruptedException {
    YarnConfiguration conf = baseConf();
    // MiniYARNCluster gives its NodeManagers this key's memory, whatever NM_PMEM_MB says.
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, AM_NODE_MB);
    return startCluster(name, conf);
  }

  /** What every NodeManager of these tests shares, Memwire's aux service aside. */
  static YarnConfiguration baseConf() {
    YarnConfiguration conf = new YarnConfiguration();
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // The FIFO scheduler needs no queue configuration (the capacity scheduler's file is not on
    // this class path) and admits the AM's container whatever its share of the node.
    conf.set(
        YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    // A shared build machine's disk may be fuller than the health checker's 90 %.
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    return conf;
  }

  /**
   * Adds Memwire's aux service to {@code conf} as {@code yarn-site.xml} does on a real node: loaded
   * from {@code auxJar} in its own class loader, tcp on loopback, {@code serviceConf} on top.
   */
  static void addAuxService(
      YarnConfiguration conf,
      Path auxJar,
      Path socket,
      Path serviceDir,
      Map<String, String> serviceConf) {
    if (!Files.isRegularFile(auxJar)) {
      throw new IllegalStateException(
          "no aux service jar at " + auxJar + ": run mvn install -DskipTests first");
    }
    conf.set(YarnConfiguration.NM_AUX_SERVICES, AUX_NAME);
    conf.set(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, AUX_NAME), AUX_CLASS);
    conf.set(
        String.format(YarnConfiguration.NM_AUX_SERVICES_CLASSPATH, AUX_NAME), auxJar.toString());
    conf.set("memwire.shuffle.service.socket", socket.toString());
    conf.set("memwire.shuffle.service.dir", serviceDir.toString());
    conf.set("memwire.shuffle.service.transfer.provider", "tcp");
    conf.set("memwire.shuffle.service.transfer.bindAddress", "127.0.0.1");
    serviceConf.forEach(conf::set);
  }

  /** Starts one ResourceManager and one NodeManager; returns once the node has registered. */
  private static MiniYARNCluster startCluster(String name, YarnConfiguration conf)
      throws InterruptedException {
    MiniYARNCluster cluster = new MiniYARNCluster(name, 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    Waits.until(
        Duration.ofSeconds(60),
        () -> cluster.getResourceManager().getRMContext().getRMNodes().size() == 1,
        () -> "the NodeManager registered with the ResourceManager");
    return cluster;
  }

  /**
   * What a Spark client needs to find this ResourceManager, as {@code spark.hadoop.*} settings
   * (Spark ships them to the application master in its Hadoop configuration).
   */
  Map<String, String> sparkHadoopConf() {
    return sparkHadoopConf(cluster);
  }

  /** As {@link #sparkHadoopConf()}, for any started {@code cluster}. */
  static Map<String, String> sparkHadoopConf(MiniYARNCluster cluster) {
    Map<String, String> m = new TreeMap<>();
    cluster
        .getConfig()
        .forEach(
            e -> {
              if (e.getKey().startsWith("yarn.resourcemanager.")) {
                m.put("spark.hadoop." + e.getKey(), e.getValue());
              }
            });
    m.put("spark.hadoop.fs.defaultFS", "file:///");
    return m;
  }

  /** The aux service's socket, which executors must be given. */
  Path socket() {
    return socket;
  }

  /** The directory the aux service keeps the outputs it took over in. */
  Path serviceDir() {
    return serviceDir;
  }

  /** The aux service's counters, asked over its socket. */
  Map<String, Long> serviceStats() {
    try {
      return ServiceClient.stats(socket, Duration.ofSeconds(10));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The underlying cluster, for what the helpers here do not cover. */
  MiniYARNCluster cluster() {
    return cluster;
  }

  /** Stops the NodeManager (its aux service with it) and the ResourceManager. */
  @Override
  public void close() {
    cluster.stop();
  }
}
