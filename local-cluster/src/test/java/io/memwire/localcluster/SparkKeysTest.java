package io.memwire.localcluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.junit.jupiter.api.Test;

/** Spark knows every key of {@link SparkKeys}: a misspelt key would be ignored without a word. */
class SparkKeysTest {

  /** Scala objects whose initialisation registers Spark's configuration entries. */
  private static final List<String> REGISTRIES =
      List.of(
          "org.apache.spark.internal.config.package$",
          "org.apache.spark.internal.config.UI$",
          "org.apache.spark.internal.config.Network$",
          "org.apache.spark.sql.internal.SQLConf$");

  /** Keys that Spark's network layer reads by name ({@code TransportConf}), not registered. */
  private static final List<String> TRANSPORT_CONF_KEYS =
      List.of(SparkKeys.SHUFFLE_IO_MAX_RETRIES, SparkKeys.SHUFFLE_IO_RETRY_WAIT);

  @Test
  void sparksRegistryKnowsEveryConfigurationKey() throws Exception {
    for (String registry : REGISTRIES) {
      Class.forName(registry).getField("MODULE$").get(null);
    }
    Class<?> entries = Class.forName("org.apache.spark.internal.config.ConfigEntry$");
    Object companion = entries.getField("MODULE$").get(null);
    java.lang.reflect.Method find = entries.getMethod("findEntry", String.class);
    List<String> unknown = new ArrayList<>();
    for (String key : SparkKeys.SPARK_CONFIGURATIONS) {
      if (!TRANSPORT_CONF_KEYS.contains(key) && find.invoke(companion, key) == null) {
        unknown.add(key);
      }
    }
    assertEquals(List.of(), unknown, "keys Spark does not declare");
  }

  @Test
  void sparksShuffleTransportReadsTheRetryKeys() {
    TransportConf conf =
        new TransportConf(
            "shuffle",
            new MapConfigProvider(
                Map.of(
                    SparkKeys.SHUFFLE_IO_MAX_RETRIES, "7", SparkKeys.SHUFFLE_IO_RETRY_WAIT, "3s")));
    assertEquals(7, conf.maxIORetries());
    assertEquals(3000, conf.ioRetryWaitTimeMs());
    assertTrue(SparkKeys.SPARK_CONFIGURATIONS.containsAll(TRANSPORT_CONF_KEYS));
  }
}
