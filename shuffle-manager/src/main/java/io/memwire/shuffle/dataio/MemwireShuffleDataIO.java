package io.memwire.shuffle.dataio;

import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.api.ShuffleDataIO;
import org.apache.spark.shuffle.api.ShuffleDriverComponents;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO;

/**
 * Service mode: {@code --conf spark.shuffle.sort.io.plugin.class=}{@value #CLASS_NAME} together
 * with {@code spark.shuffle.manager=io.memwire.shuffle.RdmaShuffleManager}. Map outputs are written
 * exactly as Spark's default plugin writes them ({@link LocalDiskShuffleDataIO}); the difference is
 * that each executor hands every finished output to its node's Memwire shuffle service, which keeps
 * it readable one-sided after the executor is gone. So the driver components report {@link
 * ShuffleDriverComponents#supportsReliableStorage() reliable storage}: Spark then keeps a lost
 * executor's map outputs registered instead of rerunning their stage, and allows dynamic allocation
 * without its external shuffle service or shuffle tracking.
 *
 * <p>An executor on a node without a service serves its outputs itself, as without this plugin; if
 * it is lost, readers of its outputs get fetch failures and Spark reruns the map stage, so results
 * stay exact either way.
 */
public final class MemwireShuffleDataIO implements ShuffleDataIO {
  /** The value of {@code spark.shuffle.sort.io.plugin.class} that turns service mode on. */
  public static final String CLASS_NAME = "io.memwire.shuffle.dataio.MemwireShuffleDataIO";

  /** Spark's key naming the plugin. */
  public static final String PLUGIN_KEY = "spark.shuffle.sort.io.plugin.class";

  /**
   * The application's token for the services, set by the driver's shuffle manager before any
   * executor starts (Spark redacts keys containing "token" in its UI and logs).
   */
  public static final String TOKEN_KEY = "spark.shuffle.plugin.__config__.memwire.appToken";

  private final LocalDiskShuffleDataIO local;

  public MemwireShuffleDataIO(SparkConf conf) {
    this.local = new LocalDiskShuffleDataIO(conf);
  }

  /** True when {@code conf} selects this plugin. */
  public static boolean selectedIn(Map<String, String> conf) {
    return CLASS_NAME.equals(conf.getOrDefault(PLUGIN_KEY, "").trim());
  }

  @Override
  public ShuffleExecutorComponents executor() {
    return local.executor();
  }

  @Override
  public ShuffleDriverComponents driver() {
    return new ReliableDriverComponents(local.driver());
  }

  /** Spark's local-disk driver components, plus the claim of reliable storage. */
  private static final class ReliableDriverComponents implements ShuffleDriverComponents {
    private final ShuffleDriverComponents delegate;

    ReliableDriverComponents(ShuffleDriverComponents delegate) {
      this.delegate = delegate;
    }

    @Override
    public Map<String, String> initializeApplication() {
      return delegate.initializeApplication();
    }

    @Override
    public void cleanupApplication() {
      delegate.cleanupApplication();
    }

    @Override
    public void registerShuffle(int shuffleId) {
      delegate.registerShuffle(shuffleId);
    }

    @Override
    public void removeShuffle(int shuffleId, boolean blocking) {
      delegate.removeShuffle(shuffleId, blocking);
    }

    @Override
    public boolean supportsReliableStorage() {
      return true;
    }
  }
}
