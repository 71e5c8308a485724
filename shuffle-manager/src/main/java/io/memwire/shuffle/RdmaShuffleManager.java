package io.memwire.shuffle;

import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.conf.WireEncryption;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.dataio.ServiceMode;
import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.migration.MigrationAwareResolver;
import io.memwire.shuffle.reader.LocalBlockCheck;
import io.memwire.shuffle.reader.RdmaShuffleReader;
import io.memwire.shuffle.reader.ReadServices;
import io.memwire.shuffle.writer.RdmaShuffleWriter;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.TransferStats;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 *
 * <p>This class is Spark's facade; its parts: {@code ManagerLifecycle} (delegating, starting,
 * started, stopped), {@code ManagerTransport} (what runs once started: node, directory, publisher,
 * read context, service link) and {@code SparkSettings} (Spark's own settings it reads).
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
  private final ReadServices delegated;

  /**
   * True when this executor's manager was built before {@code SparkEnv} (Spark 3.5's start-up
   * order): the transport starts on first use instead of in the constructor.
   */
  private final boolean deferredStart;

  /**
   * Delegating, starting, started or stopped, with the transport once it started (package-private:
   * the package's tests reach a running executor's parts through it).
   */
  final ManagerLifecycle lifecycle;

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
    this.settings = SparkSettings.asMap(conf);
    this.shuffleConf = ShuffleConf.parse(settings, SparkSettings.authSecret(conf));
    this.wire = WireEncryption.decide(settings, shuffleConf, SparkCompat.tlsRpcSupported());
    this.sort = new SortShuffleManager(conf);
    LocalBlockCheck localCheck =
        new LocalBlockCheck(
            sort.shuffleBlockResolver(),
            shuffleConf.verifyBlocks()
                    && SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_CHECKSUM_ENABLED())
                ? ChecksumAlgorithm.ofName(
                    SparkCompat.<String>get(conf, package$.MODULE$.SHUFFLE_CHECKSUM_ALGORITHM()))
                : null,
            counters.checksumMismatchesDisk::increment);
    this.resolver =
        MigrationAwareResolver.create(
            conf, sort.shuffleBlockResolver(), this::migratedOutputArrived, localCheck::check);
    this.oldFetchProtocol = SparkSettings.warnAbout(conf, wire, isDriver, localMode);
    this.serviceMode = MemwireShuffleDataIO.selectedIn(settings);
    if (serviceMode && isDriver) {
      ServiceMode.prepareDriver(conf);
    }
    this.delegated =
        wire.delegate() && (!isDriver || localMode)
            ? ReadServices.delegating(ShuffleCounters.FallbackCause.ENCRYPTION, counters)
            : null;
    this.deferredStart = !isDriver && !SparkCompat.envReady();
    if (isDriver && !localMode) {
      this.lifecycle = ManagerLifecycle.delegating("none (driver)");
    } else if (wire.delegate()) {
      // Delegated reads: nothing is registered or read one-sided, so no listener is opened.
      this.lifecycle =
          ManagerLifecycle.delegating(
              "none (" + wire.encryptedBy() + ": reads delegated to Spark)");
    } else {
      this.lifecycle =
          ManagerLifecycle.starting(
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

  /**
   * Starts the transport once (executors at construction, or at first use when built before
   * SparkEnv; local mode on first use); returns it, or null when none runs.
   */
  private ManagerTransport ensureStarted() {
    return lifecycle.ensureStarted(this::start);
  }

  private ManagerTransport start() {
    if (deferredStart) {
      // Built before SparkEnv: Spark's secret (spark.authenticate) is known only now.
      shuffleConf = ShuffleConf.parse(settings, SparkSettings.authSecret(sparkConf));
    }
    return ManagerTransport.start(
        shuffleConf, serviceMode, sort.shuffleBlockResolver(), counters, latencies);
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
    ManagerTransport s = ensureStarted();
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
    ManagerTransport s = ensureStarted();
    ReadServices rc = s != null ? s.readContext : delegated;
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
    ManagerTransport s = lifecycle.running();
    if (s != null) {
      s.unregister(shuffleId);
    }
    return sort.unregisterShuffle(shuffleId);
  }

  @Override
  public ShuffleBlockResolver shuffleBlockResolver() {
    return resolver;
  }

  /** Spark migrated an output here off a decommissioned executor: give it a pointer. */
  private void migratedOutputArrived(int shuffleId, long mapId, long indexBytes) {
    ManagerTransport s = ensureStarted();
    if (s != null) {
      s.migrated.arrived(shuffleId, mapId, indexBytes);
    }
  }

  @Override
  public void stop() {
    if (!lifecycle.stop()) {
      return;
    }
    ManagerTransport s = lifecycle.started();
    try {
      sort.stop();
    } finally {
      if (delegated != null) {
        delegated.close();
      }
      if (s != null) {
        s.close();
      }
    }
  }

  /** True once the transport runs in this JVM. */
  public boolean isTransportActive() {
    ManagerTransport s = lifecycle.running();
    return s != null && s.isActive();
  }

  /** "provider: reason" of the running transport, or why none runs. */
  public String transportDescription() {
    return lifecycle.describe();
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
    ManagerTransport s = lifecycle.started();
    return s == null ? null : s.node.stats();
  }

  /**
   * The manager's and the node's counters in one map (node ones prefixed {@code node.}), plus
   * {@code directory.shuffles}; what tests and monitoring read.
   */
  public Map<String, Long> stats() {
    Map<String, Long> m = new LinkedHashMap<>(counters.snapshot());
    ManagerTransport s = lifecycle.started();
    m.put(ShuffleMetrics.TRANSPORT_ACTIVE.name(), s != null && s.isActive() ? 1L : 0L);
    if (s == null) {
      m.put(ShuffleMetrics.SERVICE_CONNECTED.name(), 0L);
    } else {
      s.addStats(m);
    }
    return m;
  }

  /**
   * Starts the transport now if it has not started yet, as the first writer, reader or migrated
   * output would; returns whether it runs. For tools and checks that want an executor's provider
   * before its first shuffle task (on Spark 3.5 the transport starts at first use). Does nothing
   * once the manager stopped or delegates to Spark.
   */
  public boolean startTransport() {
    return ensureStarted() != null;
  }
}
