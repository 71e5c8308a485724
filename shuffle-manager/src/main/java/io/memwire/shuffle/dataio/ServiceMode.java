package io.memwire.shuffle.dataio;

import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.reader.PointerResolution;
import io.memwire.shuffle.writer.ServiceLink;
import io.memwire.transfer.TransferConfig;
import java.security.SecureRandom;
import java.util.Base64;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the shuffle manager does differently in service mode ({@link MemwireShuffleDataIO}): the
 * driver prepares the application's configuration before any executor starts, and each executor
 * links to its node's shuffle service. Called from the manager's constructor (driver) and start
 * (executor).
 */
public final class ServiceMode {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceMode.class);

  /** Spark's switch for migrating shuffle outputs off decommissioned executors. */
  public static final String MIGRATE_SHUFFLE = "spark.storage.decommission.shuffleBlocks.enabled";

  private ServiceMode() {}

  /**
   * On the driver, before any executor starts: the application's token for the services (executors
   * receive it with the rest of the driver's configuration); no host-local disk reads, since a
   * released executor's files are gone from its directories while the service still has them; no
   * shuffle migration off decommissioned executors unless asked for (the service keeps their
   * outputs); and warnings for settings that defeat the service.
   */
  public static void prepareDriver(SparkConf conf) {
    if (!conf.contains(MemwireShuffleDataIO.TOKEN_KEY)) {
      byte[] token = new byte[32];
      new SecureRandom().nextBytes(token);
      conf.set(
          MemwireShuffleDataIO.TOKEN_KEY,
          Base64.getUrlEncoder().withoutPadding().encodeToString(token));
    }
    if (!conf.contains("spark.shuffle.readHostLocalDisk")) {
      conf.set("spark.shuffle.readHostLocalDisk", "false");
      LOG.info(
          "Memwire service mode: spark.shuffle.readHostLocalDisk=false, so blocks of released "
              + "executors on the same host are read from the node's shuffle service");
    } else if (conf.getBoolean("spark.shuffle.readHostLocalDisk", true)) {
      LOG.warn(
          "Memwire service mode with spark.shuffle.readHostLocalDisk=true: blocks of a released "
              + "executor on the reader's host fail to read from its deleted files and their "
              + "map stage reruns");
    }
    if (conf.getBoolean("spark.storage.decommission.enabled", false)) {
      if (!conf.contains(MIGRATE_SHUFFLE)) {
        conf.set(MIGRATE_SHUFFLE, "false");
        LOG.info(
            "Memwire service mode: {}=false; the node's shuffle service keeps a decommissioned "
                + "executor's outputs readable one-sided, so migrating them would only copy them",
            MIGRATE_SHUFFLE);
      } else if (conf.getBoolean(MIGRATE_SHUFFLE, true)) {
        LOG.info(
            "Memwire service mode with {}=true: outputs migrated off a decommissioned executor "
                + "are handed to the receiving node's shuffle service and re-pointed there",
            MIGRATE_SHUFFLE);
      }
    }
    if (conf.getBoolean("spark.authenticate", false)
        && !conf.contains(ShuffleConf.PREFIX + TransferConfig.AUTH_SECRET)) {
      LOG.warn(
          "Memwire service mode with spark.authenticate=true: set {}{} to the secret of the "
              + "nodes' shuffle services ({}{}); this application's own Spark secret cannot "
              + "match a service shared by applications, so reads from the services would fail",
          ShuffleConf.PREFIX,
          TransferConfig.AUTH_SECRET,
          ServiceClient.SERVICE_TRANSFER_KEY_PREFIX,
          TransferConfig.AUTH_SECRET);
    }
    if (conf.getBoolean("spark.dynamicAllocation.enabled", false)
        && conf.getBoolean("spark.dynamicAllocation.shuffleTracking.enabled", true)
        && !conf.getBoolean("spark.shuffle.service.enabled", false)) {
      LOG.warn(
          "Memwire service mode: spark.dynamicAllocation.shuffleTracking.enabled=true keeps "
              + "executors holding shuffle data alive; set it to false to release them while the "
              + "node's shuffle service serves their outputs");
    }
  }

  /**
   * How this executor re-resolves pointers of restarted services ({@link PointerResolution}), or
   * null when {@code service.resolvePort} is unset or the driver set no token.
   */
  public static PointerResolution resolution(SparkEnv env, ShuffleConf shuffleConf) {
    SparkConf conf = env.conf();
    String token = conf.get(MemwireShuffleDataIO.TOKEN_KEY, null);
    if (token == null || shuffleConf.serviceResolvePort().isEmpty()) {
      return null;
    }
    return new PointerResolution(
        applicationId(conf),
        Base64.getUrlDecoder().decode(token),
        shuffleConf.serviceResolvePort().getAsInt(),
        shuffleConf.serviceResolveTimeout());
  }

  /** The application's id as its executors register it with the services. */
  private static String applicationId(SparkConf conf) {
    String app = conf.getAppId();
    String attempt = conf.get("spark.app.attempt.id", null);
    return attempt == null ? app : app + "_" + attempt;
  }

  /** The link to the node's shuffle service; null (logged) when the driver set no token. */
  public static ServiceLink link(SparkEnv env, ShuffleConf shuffleConf, String who) {
    SparkConf conf = env.conf();
    String token = conf.get(MemwireShuffleDataIO.TOKEN_KEY, null);
    if (token == null) {
      LOG.warn(
          "Memwire service mode on {}: the driver set no application token ({} is missing; is "
              + "the driver's spark.shuffle.manager Memwire's?); map outputs are served by this JVM",
          who,
          MemwireShuffleDataIO.TOKEN_KEY);
      return null;
    }
    ServiceClient.Registration reg =
        new ServiceClient.Registration(
            applicationId(conf),
            env.executorId(),
            Base64.getUrlDecoder().decode(token),
            conf.get("spark.driver.host", ""),
            conf.getInt("spark.driver.port", 0));
    return new ServiceLink(
        shuffleConf.serviceSocket(), reg, shuffleConf.serviceTimeout(), shuffleConf.serviceUsers());
  }
}
