package io.memwire.shuffle.conf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.SparkKeys;
import io.memwire.transfer.settings.TransportSettings;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The applications' copies of Memwire's keys ({@link SparkKeys}, constants for launchers without
 * Memwire's classes) name the declared settings.
 */
class AppKeysTest {

  @Test
  void theApplicationsMemwireKeysAreTheDeclaredOnes() {
    String p = ShuffleConf.PREFIX;
    assertEquals(
        List.of(
            TransportSettings.PROVIDER.name(p),
            ShuffleSettings.FALLBACK_SETTING.name(p),
            TransportSettings.CONNECT_TIMEOUT.name(p),
            TransportSettings.READ_TIMEOUT.name(p),
            TransportSettings.BIND_ADDRESS.name(p)),
        SparkKeys.MEMWIRE_KEYS);
    for (String key : SparkKeys.MEMWIRE_KEYS) {
      assertTrue(
          ShuffleSettings.KEYS.containsKey(key.substring(p.length())),
          key + " is not a declared key");
    }
  }
}
