package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.conf.WireEncryption;
import io.memwire.transfer.TransferConfigException;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Which Spark settings make reads go through Spark's encrypted transfer, and the explicit opt-out.
 */
class WireEncryptionDecisionTest {
  private static WireEncryption decide(String... kv) {
    Map<String, String> conf = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      conf.put(kv[i], kv[i + 1]);
    }
    return WireEncryption.decide(conf, ShuffleConf.parse(conf, null));
  }

  private static WireEncryption decideOnSpark35(String... kv) {
    Map<String, String> conf = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      conf.put(kv[i], kv[i + 1]);
    }
    return WireEncryption.decide(conf, ShuffleConf.parse(conf, null), false);
  }

  @Test
  void onSparkWithoutTlsRpcOnlyAesAndSaslEncryptShuffleTraffic() {
    // Spark 3.5: spark.ssl.* configures the UI and file server, never the block transfer.
    assertNull(decideOnSpark35("spark.ssl.enabled", "true").encryptedBy());
    assertFalse(decideOnSpark35("spark.ssl.rpc.enabled", "true").delegate());
    assertEquals(
        "spark.network.crypto.enabled=true",
        decideOnSpark35("spark.ssl.enabled", "true", "spark.network.crypto.enabled", "true")
            .encryptedBy());
    assertTrue(decideOnSpark35("spark.network.crypto.enabled", "true").delegate());
    assertTrue(decideOnSpark35("spark.authenticate.enableSaslEncryption", "true").delegate());
  }

  @Test
  void theManagerDecidesWithWhatTheRunningSparkCanEncrypt() {
    Map<String, String> conf = Map.of("spark.ssl.enabled", "true");
    WireEncryption w =
        WireEncryption.decide(conf, ShuffleConf.parse(conf, null), SparkCompat.tlsRpcSupported());
    assertEquals(SparkCompat.tlsRpcSupported(), w.delegate());
  }

  @Test
  void noEncryptionReadsOneSided() {
    WireEncryption w = decide();
    assertNull(w.encryptedBy());
    assertFalse(w.delegate());
    assertNull(w.describe());
    assertFalse(decide("spark.network.crypto.enabled", "false").delegate());
  }

  @Test
  void eachWayOfEncryptingSparksNetworkDelegatesReads() {
    assertEquals(
        "spark.network.crypto.enabled=true",
        decide("spark.network.crypto.enabled", "true").encryptedBy());
    assertEquals(
        "spark.authenticate.enableSaslEncryption=true",
        decide("spark.authenticate.enableSaslEncryption", "true").encryptedBy());
    assertEquals(
        "spark.ssl.rpc.enabled=true", decide("spark.ssl.rpc.enabled", "true").encryptedBy());
    // spark.ssl.rpc.enabled inherits spark.ssl.enabled, and an explicit false wins over it.
    assertEquals("spark.ssl.enabled=true", decide("spark.ssl.enabled", "true").encryptedBy());
    assertFalse(decide("spark.ssl.enabled", "true", "spark.ssl.rpc.enabled", "false").delegate());
    for (String key :
        new String[] {
          "spark.network.crypto.enabled",
          "spark.authenticate.enableSaslEncryption",
          "spark.ssl.rpc.enabled"
        }) {
      WireEncryption w = decide(key, "TRUE");
      assertTrue(w.delegate(), key);
      assertTrue(
          w.describe().contains("read through Spark's own encrypted transfer"), w.describe());
    }
  }

  @Test
  void theExplicitSettingAllowsClearOneSidedReads() {
    WireEncryption w =
        decide(
            "spark.network.crypto.enabled",
            "true",
            "spark.shuffle.rdma.allowCleartextReads",
            "true");
    assertFalse(w.delegate());
    assertTrue(w.describe().contains("UNENCRYPTED"), w.describe());
    assertTrue(w.describe().contains("block bytes in clear"), w.describe());
    WireEncryption atRest =
        decide(
            "spark.network.crypto.enabled",
            "true",
            "spark.shuffle.rdma.allowCleartextReads",
            "true",
            "spark.io.encryption.enabled",
            "true");
    assertTrue(atRest.ioEncryption());
    assertTrue(
        atRest.describe().contains("index entries and directory slots are not"), atRest.describe());
  }

  @Test
  void delegationWithFallbackOffIsAConfigurationErrorNamingBothKeys() {
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () ->
                decide(
                    "spark.network.crypto.enabled",
                    "true",
                    "spark.shuffle.rdma.fallback",
                    "false"));
    assertTrue(e.getMessage().contains("spark.shuffle.rdma.fallback=false"), e.getMessage());
    assertTrue(
        e.getMessage().contains("spark.shuffle.rdma.allowCleartextReads=true"), e.getMessage());
    // Allowed explicitly: no fallback needed, so no error.
    assertFalse(
        decide(
                "spark.network.crypto.enabled",
                "true",
                "spark.shuffle.rdma.fallback",
                "false",
                "spark.shuffle.rdma.allowCleartextReads",
                "true")
            .delegate());
  }

  @Test
  void badValueOfTheKeyIsRejectedByName() {
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () -> decide("spark.shuffle.rdma.allowCleartextReads", "yes"));
    assertTrue(
        e.getMessage().contains("spark.shuffle.rdma.allowCleartextReads=yes"), e.getMessage());
  }
}
