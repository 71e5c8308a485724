package io.memwire.shuffle;

import io.memwire.shuffle.conf.WireEncryption;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/** What the manager reads from Spark's own settings, and the warnings about them. */
final class SparkSettings {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaShuffleManager.class);

  private SparkSettings() {}

  /** Every setting as a map. */
  static Map<String, String> asMap(SparkConf conf) {
    Map<String, String> m = new HashMap<>();
    for (Tuple2<String, String> t : conf.getAll()) {
      m.put(t._1(), t._2());
    }
    return m;
  }

  /** Spark's shared secret when {@code spark.authenticate} is on, else null. */
  static String authSecret(SparkConf conf) {
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

  /**
   * Logs settings that keep blocks off the RDMA path; returns true when reads go to Spark (its old
   * fetch protocol).
   */
  static boolean warnAbout(
      SparkConf conf, WireEncryption wire, boolean isDriver, boolean localMode) {
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
}
