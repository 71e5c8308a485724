package io.memwire.shuffle;

import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.conf.WireEncryption;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.dataio.ServiceMode;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.migration.MigratedOutputs;
import io.memwire.shuffle.migration.MigrationAwareResolver;
import io.memwire.shuffle.reader.RdmaShuffleReader;
import io.memwire.shuffle.reader.ReadContext;
import io.memwire.shuffle.writer.MapOutputPublisher;
import io.memwire.shuffle.writer.RdmaShuffleWriter;
import io.memwire.shuffle.writer.ServiceLink;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.TransferStats;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.apache.spark.storage.BlockManagerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * Spark's sort-based shuffle with one-sided reads. Map outputs are Spark's own files, written by
 * Spark's writers through an owned {@link SortShuffleManager}; each finished output is registered
 * with this executor's {@link TransferNode} and published in its {@link ShuffleDirectory}, and
 * reducers read blocks one-sided, falling back to Spark's own transfer per peer when they cannot.
 *
 * <p>When Spark encrypts its network ({@link WireEncryption}) the transport does not start, no map
 * output is registered, and every block is read through Spark's own encrypted transfer, unless
 * {@code spark.shuffle.rdma.allowCleartextReads=true}.
 *
 * <p>Enable with {@code --conf spark.shuffle.manager=io.memwire.shuffle.RdmaShuffleManager} and the
 * jar on {@code --jars} (Spark 4) or on {@code spark.driver.extraClassPath} and {@code
 * spark.executor.extraClassPath} (Spark 3.5, which builds the manager before it adds {@code --jars}
 * to the executor's class loader). Settings: {@link ShuffleConf} (keys under {@code
 * spark.shuffle.rdma.}).
 *
 * <p>Start-up: Spark 4 builds an executor's manager once {@code SparkEnv} and the block manager
 * exist, and the transport starts in the constructor. Spark 3.5 builds it before both: then the
 * transport starts at the manager's first use (a writer, a reader, a migrated output), when Spark's
 * security secret and the executor's identity are known ({@link SparkCompat#envReady()}).
 */
public final class RdmaShuffleManager implements ShuffleManager {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaShuffleManager.class);

  private final boolean isDriver;
  private final boolean localMode;
  private final SortShuffleManager sort;
  private final SparkConf sparkConf;
  private final Map<String, String> settings;

  /** Parsed at construction; parsed again at a deferred start, when Spark's secret is known. */
  private volatile ShuffleConf shuffleConf;

  private final ShuffleCounters counters = new ShuffleCounters();
  private final PeerReadLatencies latencies = new PeerReadLatencies();
  private final WireEncryption wire;

  /** What Spark gets from {@link #shuffleBlockResolver()}: sort's, plus migrated arrivals. */
  private final IndexShuffleBlockResolver resolver;

  /** Outputs go to the node's shuffle service ({@link MemwireShuffleDataIO} is Spark's plugin). */
  private final boolean serviceMode;

  /** Spark's old fetch protocol: Spark's own reader, untouched. */
  private final boolean oldFetchProtocol;

  /** Reads every block through Spark's client, counted by cause; null unless {@link #wire} says. */
  private final ReadContext delegated;

  /**
   * True when this executor's manager was built before {@code SparkEnv} (Spark 3.5's start-up
   * order): the transport starts on first use instead of in the constructor.
   */
  private final boolean deferredStart;

  /**
   * Where this manager is. It moves STARTING -> STARTED or DELEGATING, and from any phase to
   * STOPPED; only under this object's monitor. Read without it.
   */
  private volatile Lifecycle lifecycle;

  /** The phases of {@link #lifecycle}. */
  private enum Phase {
    /** The transport starts at first use (built before SparkEnv, or the local-mode driver). */
    STARTING,
    /** The transport runs: map outputs are registered and read one-sided. */
    STARTED,
    /** No transport in this JVM: Spark's sort shuffle does everything (the reason says why). */
    DELEGATING,
    /** {@link #stop()} ran. */
    STOPPED
  }

  /**
   * A phase, the transport (running when STARTED, closed when STOPPED after a start: its counters
   * stay readable) and why no transport runs (for {@link #transportDescription()}).
   */
  private record Lifecycle(Phase phase, Started started, String why) {
    static Lifecycle delegating(String why) {
      return new Lifecycle(Phase.DELEGATING, null, why);
    }

    /** The transport if it runs, else null. */
    Started running() {
      return phase == Phase.STARTED ? started : null;
    }
  }

  /** The transport and what depends on it; absent while RDMA is off in this JVM. */
  private static final class Started {
    final TransferNode node;
    final ShuffleDirectory directory;
    final MapOutputPublisher publisher;
    final ReadContext readContext;
    final ServiceLink service;
    final MigratedOutputs migrated;

    Started(
        TransferNode node,
        ShuffleDirectory directory,
        MapOutputPublisher publisher,
        ReadContext readContext,
        ServiceLink service,
        MigratedOutputs migrated) {
      this.service = service;
      this.migrated = migrated;
      this.node = node;
      this.directory = directory;
      this.publisher = publisher;
      this.readContext = readContext;
    }
  }

  /**
   * Called by Spark on the driver and on every executor.
   *
   * @throws TransferConfigException when a {@code spark.shuffle.rdma.*} setting is invalid (the
   *     message names the key)
   * @throws IllegalStateException on an executor when the transport cannot start and fallback is
   *     not possible (provider verbs requested, or fallback=false)
   */
  public RdmaShuffleManager(SparkConf conf, boolean isDriver) {
    this.isDriver = isDriver;
    this.sparkConf = conf;
    String master = conf.get("spark.master", "");
    this.localMode = master.startsWith("local") && !master.startsWith("local-cluster");
    this.settings = asMap(conf);
    this.shuffleConf = ShuffleConf.parse(settings, authSecret(conf));
    this.wire = WireEncryption.decide(settings, shuffleConf, SparkCompat.tlsRpcSupported());
    this.sort = new SortShuffleManager(conf);
    this.resolver =
        MigrationAwareResolver.create(
            conf, sort.shuffleBlockResolver(), this::migratedOutputArrived);
    this.oldFetchProtocol = warnAboutSettings(conf);
    this.serviceMode = MemwireShuffleDataIO.selectedIn(settings);
    if (serviceMode && isDriver) {
      ServiceMode.prepareDriver(conf);
    }
    this.delegated =
        wire.delegate() && (!isDriver || localMode)
            ? ReadContext.delegating(ShuffleCounters.FallbackCause.ENCRYPTION, counters)
            : null;
    this.deferredStart = !isDriver && !SparkCompat.envReady();
    if (isDriver && !localMode) {
      this.lifecycle = Lifecycle.delegating("none (driver)");
    } else if (wire.delegate()) {
      // Delegated reads: nothing is registered or read one-sided, so no listener is opened.
      this.lifecycle =
          Lifecycle.delegating("none (" + wire.encryptedBy() + ": reads delegated to Spark)");
    } else {
      this.lifecycle =
          new Lifecycle(
              Phase.STARTING,
              null,
              deferredStart
                  ? "none yet (built before SparkEnv: starts at first use)"
                  : "none yet (starts at first use)");
    }
    if (!isDriver) {
      LOG.info(
          "Memwire shuffle on Spark {} ({}): {}",
          SparkCompat.sparkVersion(),
          SparkCompat.probes(),
          deferredStart
              ? "built before SparkEnv exists, the transport starts at first use"
              : "SparkEnv exists, the transport starts now");
      if (!deferredStart) {
        ensureStarted();
      }
    }
  }

  /**
   * The manager of this JVM's {@code SparkEnv} (an executor's, or the driver's in local mode), or
   * null when Spark runs another shuffle manager or no SparkEnv exists (yet, or any more).
   */
  public static RdmaShuffleManager current() {
    SparkEnv env = SparkEnv.get();
    return env != null && env.shuffleManager() instanceof RdmaShuffleManager m ? m : null;
  }

  private static Map<String, String> asMap(SparkConf conf) {
    Map<String, String> m = new HashMap<>();
    for (Tuple2<String, String> t : conf.getAll()) {
      m.put(t._1(), t._2());
    }
    return m;
  }

  private static String authSecret(SparkConf conf) {
    if (!conf.getBoolean("spark.authenticate", false)) {
      return null;
    }
    SparkEnv env = SparkEnv.get();
    String secret = null;
    if (env != null && env.securityManager() != null) {
      secret = env.securityManager().getSecretKey();
    }
    if (secret == null) {
      secret = conf.get("spark.authenticate.secret", null);
    }
    return secret;
  }

  /** Logs settings that keep blocks off the RDMA path; returns true when reads go to Spark. */
  private boolean warnAboutSettings(SparkConf conf) {
    String encryption = wire.describe();
    if (encryption != null && wire.encryptedBy() != null && !wire.delegate()) {
      LOG.warn("Memwire shuffle: {}", encryption);
    } else if (encryption != null) {
      LOG.info("Memwire shuffle: {}", encryption);
    }
    boolean delegate = false;
    if (conf.getBoolean("spark.shuffle.useOldFetchProtocol", false)) {
      LOG.warn(
          "spark.shuffle.useOldFetchProtocol=true: reduce tasks read through Spark's own "
              + "transfer, not one-sided");
      delegate = true;
    }
    if (conf.getBoolean("spark.shuffle.push.enabled", false)) {
      LOG.warn(
          "spark.shuffle.push.enabled=true: merged (push-based) shuffles are read through "
              + "Spark's own transfer");
    }
    if (!isDriver && !localMode && conf.getBoolean("spark.shuffle.readHostLocalDisk", true)) {
      LOG.warn(
          "spark.shuffle.readHostLocalDisk=true: blocks of executors on the same host are "
              + "read from their disk, not one-sided");
    }
    return delegate;
  }

  /**
   * Starts the transport once (executors at construction, or at first use when built before
   * SparkEnv; local mode on first use).
   */
  private Started ensureStarted() {
    Lifecycle l = lifecycle;
    if (l.phase() != Phase.STARTING) {
      return l.running();
    }
    synchronized (this) {
      if (lifecycle.phase() == Phase.STARTING) {
        // A start that throws (verbs asked for, or fallback=false) leaves STARTING: the next use
        // tries again and fails the same way, as Spark retries the task.
        Started s = start();
        lifecycle =
            s != null
                ? new Lifecycle(Phase.STARTED, s, null)
                : Lifecycle.delegating("none (Spark's own transfer only)");
      }
      return lifecycle.running();
    }
  }

  private Started start() {
    SparkEnv env = SparkEnv.get();
    if (deferredStart) {
      // Built before SparkEnv: Spark's secret (spark.authenticate) is known only now.
      shuffleConf = ShuffleConf.parse(settings, authSecret(sparkConf));
    }
    BlockManagerId me =
        env == null || env.blockManager() == null ? null : env.blockManager().blockManagerId();
    String host = me == null ? null : me.host();
    String who = me == null ? "this JVM" : "executor " + me.executorId();
    TransferConfig tc = shuffleConf.transfer(host);
    TransferNode node;
    try {
      node = TransferNode.start(tc);
    } catch (RuntimeException e) {
      if (shuffleConf.provider() == ProviderKind.VERBS) {
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
      if (!shuffleConf.fallback()) {
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
      service = ServiceMode.link(env, shuffleConf, who);
    }
    MapOutputPublisher publisher =
        new MapOutputPublisher(
            node,
            directory,
            sort.shuffleBlockResolver(),
            shuffleConf.fallback(),
            counters,
            service);
    ReadContext rc =
        new ReadContext(
            node,
            shuffleConf.readBatchBlocks(),
            shuffleConf.readBatchBytes(),
            shuffleConf.fallback(),
            shuffleConf.indexCacheSize(),
            counters,
            latencies);
    if (serviceMode && env != null) {
      rc.resolveWith(ServiceMode.resolution(env, shuffleConf));
    }
    LOG.info(
        "Memwire shuffle on {} (Spark {}): provider {} because {}; endpoint {}; fallback {}; "
            + "map outputs served by {}",
        who,
        SparkCompat.sparkVersion(),
        node.provider(),
        node.selectionReason(),
        node.localAddress(),
        shuffleConf.fallback() ? "allowed" : "off",
        service == null
            ? "this JVM"
            : service.client() != null
                ? "the node's shuffle service (" + service.socket() + ")"
                : "this JVM until a shuffle service answers on " + service.socket());
    return new Started(
        node, directory, publisher, rc, service, new MigratedOutputs(publisher, counters));
  }

  @Override
  public <K, V, C> ShuffleHandle registerShuffle(
      int shuffleId, ShuffleDependency<K, V, C> dependency) {
    return sort.registerShuffle(shuffleId, dependency);
  }

  @Override
  public <K, V> ShuffleWriter<K, V> getWriter(
      ShuffleHandle handle, long mapId, TaskContext context, ShuffleWriteMetricsReporter metrics) {
    ShuffleWriter<K, V> writer = sort.getWriter(handle, mapId, context, metrics);
    Started s = ensureStarted();
    if (s == null) {
      return writer;
    }
    return new RdmaShuffleWriter<>(
        writer, s.publisher, handle.shuffleId(), mapId, context.partitionId());
  }

  @Override
  @SuppressWarnings("unchecked")
  public <K, C> ShuffleReader<K, C> getReader(
      ShuffleHandle handle,
      int startMapIndex,
      int endMapIndex,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    BaseShuffleHandle<K, ?, C> base = (BaseShuffleHandle<K, ?, C>) handle;
    Started s = ensureStarted();
    ReadContext rc = s != null ? s.readContext : delegated;
    if (rc == null || oldFetchProtocol || base.dependency().isShuffleMergeFinalizedMarked()) {
      return sort.getReader(
          handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
    }
    var blocks =
        SparkEnv.get()
            .mapOutputTracker()
            .getMapSizesByExecutorId(
                handle.shuffleId(), startMapIndex, endMapIndex, startPartition, endPartition);
    boolean batch = SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context);
    return new RdmaShuffleReader<>(base, blocks, context, metrics, batch, rc);
  }

  @Override
  public boolean unregisterShuffle(int shuffleId) {
    Started s = lifecycle.running();
    if (s != null) {
      s.directory.unregister(shuffleId);
      s.readContext.forget(shuffleId);
      if (s.service != null) {
        s.service.removeShuffle(shuffleId);
      }
    }
    return sort.unregisterShuffle(shuffleId);
  }

  @Override
  public ShuffleBlockResolver shuffleBlockResolver() {
    return resolver;
  }

  /** Spark migrated an output here off a decommissioned executor: give it a pointer. */
  private void migratedOutputArrived(int shuffleId, long mapId, long indexBytes) {
    Started s = ensureStarted();
    if (s != null) {
      s.migrated.arrived(shuffleId, mapId, indexBytes);
    }
  }

  @Override
  public void stop() {
    Started s;
    synchronized (this) {
      if (lifecycle.phase() == Phase.STOPPED) {
        return;
      }
      s = lifecycle.running();
      lifecycle = new Lifecycle(Phase.STOPPED, s, "none (stopped)");
    }
    try {
      sort.stop();
    } finally {
      if (delegated != null) {
        delegated.close();
      }
      if (s != null) {
        if (s.service != null) {
          s.service.close();
        }
        s.readContext.close();
        s.directory.close();
        s.node.close();
      }
    }
  }

  /** True once the transport runs in this JVM. */
  public boolean isTransportActive() {
    Started s = lifecycle.running();
    return s != null && !s.node.isClosed();
  }

  /** "provider: reason" of the running transport, or why none runs. */
  public String transportDescription() {
    Lifecycle l = lifecycle;
    Started s = l.running();
    return s == null ? l.why() : s.node.provider() + ": " + s.node.selectionReason();
  }

  /** True when this manager was built before SparkEnv and starts its transport at first use. */
  public boolean isStartDeferred() {
    return deferredStart;
  }

  /** The validated settings. */
  public ShuffleConf shuffleConf() {
    return shuffleConf;
  }

  /** The encryption decision, the same on the driver and every executor. */
  public WireEncryption wireEncryption() {
    return wire;
  }

  /** Latency histograms of one-sided reads by peer executor (live). */
  public PeerReadLatencies readLatencies() {
    return latencies;
  }

  /** This JVM's counters (live). */
  public ShuffleCounters counters() {
    return counters;
  }

  /** The transport's counters, or null when it does not run here. */
  public TransferStats transferStats() {
    Started s = lifecycle.started();
    return s == null ? null : s.node.stats();
  }

  /**
   * The manager's and the node's counters in one map (node ones prefixed {@code node.}), plus
   * {@code directory.shuffles}; what tests and monitoring read.
   */
  public Map<String, Long> stats() {
    Map<String, Long> m = new LinkedHashMap<>(counters.snapshot());
    Started s = lifecycle.started();
    m.put("transportActive", s != null && !s.node.isClosed() ? 1L : 0L);
    m.put("serviceConnected", s != null && s.service != null && s.service.isConnected() ? 1L : 0L);
    if (s != null) {
      m.put("directory.shuffles", (long) s.directory.shuffles());
      s.node.stats().asMap().forEach((k, v) -> m.put("node." + k, v));
    }
    return m;
  }

  /**
   * Test hook: what the first writer, reader or migrated output does before its work, start the
   * transport if it does not run yet; returns whether it runs.
   */
  public boolean startForTesting() {
    return ensureStarted() != null;
  }

  /** Test hook: invalidates this executor's directory slots of a shuffle; returns slots changed. */
  public int invalidateDirectoryForTesting(int shuffleId) {
    Started s = lifecycle.running();
    if (s == null) {
      return 0;
    }
    s.readContext.forget(shuffleId);
    return s.directory.invalidateForTesting(shuffleId);
  }
}
