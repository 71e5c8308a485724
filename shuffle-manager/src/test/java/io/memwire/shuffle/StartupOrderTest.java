package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.transfer.TransferConfig;
import java.nio.charset.StandardCharsets;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.junit.jupiter.api.Test;

/**
 * Spark 3.5's start-up order on any Spark line: an executor's manager built before {@code SparkEnv}
 * exists (3.5's {@code SparkEnv.create} builds the shuffle manager before the block manager and
 * before setting {@code SparkEnv}) must not start its transport then, and must start it at first
 * use with what only {@code SparkEnv} knows: Spark's authentication secret.
 */
class StartupOrderTest {

  @Test
  void builtBeforeSparkEnvStartsAtFirstUseWithSparksSecret() {
    assertNull(SparkEnv.get(), "no SparkEnv in this JVM yet");
    SparkConf executorConf =
        new SparkConf(false)
            .set("spark.master", "spark://127.0.0.1:7077")
            .set("spark.app.id", "startup-order")
            .set("spark.authenticate", "true")
            .set(ShuffleConf.PREFIX + TransferConfig.PROVIDER, "tcp")
            .set(ShuffleConf.PREFIX + TransferConfig.BIND_ADDRESS, "127.0.0.1");
    RdmaShuffleManager manager = new RdmaShuffleManager(executorConf, false);
    SparkContext sc = null;
    try {
      assertTrue(manager.isStartDeferred(), "built before SparkEnv");
      assertFalse(manager.isTransportActive(), "no transport before SparkEnv exists");
      assertTrue(
          manager.transportDescription().contains("starts at first use"),
          manager.transportDescription());
      assertTrue(
          manager.shuffleConf().transfer(null).authSecret().isEmpty(),
          "Spark's secret is not known yet");

      // SparkEnv appears (here: a local application's, with a generated secret).
      sc =
          new SparkContext(
              new SparkConf()
                  .setMaster("local[1]")
                  .setAppName("startup-order")
                  .set("spark.ui.enabled", "false")
                  .set("spark.authenticate", "true"));
      String secret = SparkEnv.get().securityManager().getSecretKey();

      assertTrue(manager.startTransport(), manager.transportDescription());
      assertTrue(manager.isTransportActive());
      assertArrayEquals(
          secret.getBytes(StandardCharsets.UTF_8),
          manager.shuffleConf().transfer(null).authSecret().orElseThrow(),
          "the transport uses Spark's secret, known only once SparkEnv exists");
    } finally {
      manager.stop();
      if (sc != null) {
        sc.stop();
      }
    }
  }
}
