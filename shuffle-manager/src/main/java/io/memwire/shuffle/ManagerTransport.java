package io.memwire.shuffle;

import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.dataio.ServiceMode;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.migration.MigratedOutputs;
import io.memwire.shuffle.reader.ReadServices;
import io.memwire.shuffle.writer.MapOutputPublisher;
import io.memwire.shuffle.writer.ServiceLink;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferNode;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.apache.spark.internal.config.package$;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockManagerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transport of one {@link RdmaShuffleManager} and what depends on it: the node, this executor's
 * shuffle directory, the map side's publisher, the reduce side's read context, the link to the
 * node's shuffle service (service mode) and migrated outputs. Built by {@link #start}, closed once
 * by {@link #close()}.
 */
final class ManagerTransport {
  private static final Logger LOG = LoggerFactory.getLogger(ManagerTransport.class);

  final TransferNode node;
  final ShuffleDirectory directory;
  final MapOutputPublisher publisher;
  final ReadServices readContext;

  /** The node's shuffle service, or null when this JVM serves its outputs. */
  final ServiceLink service;

  final MigratedOutputs migrated;

  private ManagerTransport(
      TransferNode node,
      ShuffleDirectory directory,
      MapOutputPublisher publisher,
      ReadServices readContext,
      ServiceLink service,
      MigratedOutputs migrated) {
    this.node = node;
    this.directory = directory;
    this.publisher = publisher;
    this.readContext = readContext;
    this.service = service;
    this.migrated = migrated;
  }

  /**
   * Starts the node and what depends on it, or returns null when the node cannot start and blocks
   * may go through Spark's own transfer.
   *
   * @throws IllegalStateException when the node cannot start and fallback is not possible (provider
   *     verbs requested, or fallback=false)
   */
  /** What the start line says of block verification: on with Spark's checksums, or why not. */
  private static String integrity(SparkEnv env, ShuffleConf conf) {
    if (!conf.verifyBlocks()) {
      return "block verification off: spark.shuffle.rdma.verifyBlocks=false (blocks are read"
          + " unverified)";
    }
    if (env == null) {
      return "blocks verified where their map output has a checksum file";
    }
    boolean on = SparkCompat.<Boolean>get(env.conf(), package$.MODULE$.SHUFFLE_CHECKSUM_ENABLED());
    return on
        ? "blocks verified against Spark's shuffle checksums ("
            + SparkCompat.<String>get(env.conf(), package$.MODULE$.SHUFFLE_CHECKSUM_ALGORITHM())
            + ") before Spark reads them"
        : "block verification off: spark.shuffle.checksum.enabled=false (no checksum files are"
            + " written; blocks are read unverified)";
  }

  static ManagerTransport start(
      ShuffleConf conf,
      boolean serviceMode,
      IndexShuffleBlockResolver sortResolver,
      ShuffleCounters counters,
      PeerReadLatencies latencies) {
    SparkEnv env = SparkEnv.get();
    BlockManagerId me =
        env == null || env.blockManager() == null ? null : env.blockManager().blockManagerId();
    String host = me == null ? null : me.host();
    String who = me == null ? "this JVM" : "executor " + me.executorId();
    TransferNode node;
    try {
      node = TransferNode.start(conf.transfer(host));
    } catch (RuntimeException e) {
      if (conf.provider() == ProviderKind.VERBS) {
        throw new IllegalStateException(
            ShuffleConf.PREFIX
                + "provider=verbs but the verbs "
                + "transport cannot start on "
                + who
                + ": "
                + e.getMessage()
                + " (use provider=auto "
                + "to fall back to tcp)",
            e);
      }
      if (!conf.fallback()) {
        throw new IllegalStateException(
            "the transfer node cannot start on "
                + who
                + " and "
                + ShuffleConf.PREFIX
                + "fallback=false: "
                + e.getMessage(),
            e);
      }
      LOG.warn(
          "Memwire shuffle on {}: transport did not start ({}); all blocks go through "
              + "Spark's own transfer",
          who,
          e.getMessage());
      return null;
    }
    ShuffleDirectory directory = new ShuffleDirectory(node);
    ServiceLink service = null;
    if (serviceMode && env == null) {
      LOG.warn("Memwire service mode on {}: no SparkEnv, map outputs are served by this JVM", who);
    } else if (serviceMode) {
      service = ServiceMode.link(env, conf, who);
    }
    MapOutputPublisher publisher =
        new MapOutputPublisher(node, directory, sortResolver, conf.fallback(), counters, service);
    if (env != null
        && conf.verifyBlocks()
        && SparkCompat.<Boolean>get(env.conf(), package$.MODULE$.SHUFFLE_CHECKSUM_ENABLED())) {
      publisher.checksums(
          SparkCompat.<String>get(env.conf(), package$.MODULE$.SHUFFLE_CHECKSUM_ALGORITHM()));
    }
    ReadServices rc =
        new ReadServices(
            node,
            conf.readBatchBlocks(),
            conf.readBatchBytes(),
            conf.fallback(),
            conf.indexCacheSize(),
            counters,
            latencies);
    if (serviceMode && env != null) {
      rc.resolveWith(ServiceMode.resolution(env, conf));
    }
    LOG.info(
        "Memwire shuffle on {} (Spark {}): provider {} because {}; endpoint {}; fallback {}; "
            + "map outputs served by {}; {}",
        who,
        SparkCompat.sparkVersion(),
        node.provider(),
        node.selectionReason(),
        node.localAddress(),
        conf.fallback() ? "allowed" : "off",
        service == null
            ? "this JVM"
            : service.client() != null
                ? "the node's shuffle service (" + service.socket() + ")"
                : "this JVM until a shuffle service answers on " + service.socket(),
        integrity(env, conf));
    return new ManagerTransport(
        node, directory, publisher, rc, service, new MigratedOutputs(publisher, counters));
  }

  /** Forgets a shuffle: this executor's slots, cached indexes, and the service's copy. */
  void unregister(int shuffleId) {
    directory.unregister(shuffleId);
    readContext.forget(shuffleId);
    if (service != null) {
      service.removeShuffle(shuffleId);
    }
  }

  /** True while the node is open. */
  boolean isActive() {
    return !node.isClosed();
  }

  /** "provider: reason". */
  String describe() {
    return node.provider() + ": " + node.selectionReason();
  }

  /**
   * Adds the service link, the directory's, the index cache's and the node's figures (prefixed
   * {@code node.}).
   */
  void addStats(Map<String, Long> m) {
    m.put(
        ShuffleMetrics.SERVICE_CONNECTED.name(),
        service != null && service.isConnected() ? 1L : 0L);
    m.put(ShuffleMetrics.DIRECTORY_SHUFFLES.name(), (long) directory.shuffles());
    m.put(ShuffleMetrics.INDEX_CACHE_BYTES.name(), readContext.indexCacheBytes());
    node.stats().byMetric().forEach((k, v) -> m.put(ShuffleMetrics.node(k), v));
  }

  /** Closes the service link, the read context, the directory, then the node. */
  void close() {
    if (service != null) {
      service.close();
    }
    readContext.close();
    directory.close();
    node.close();
  }
}
