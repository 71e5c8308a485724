package io.memwire.shuffle.conf;

import io.memwire.transfer.TransferConfigException;
import java.util.Locale;
import java.util.Map;

/**
 * Whether shuffle blocks may travel one-sided, decided from the Spark configuration alone, so the
 * driver and every executor (which all get the driver's {@code spark.*} settings) decide alike.
 *
 * <p>Spark encrypts its block transfers with AES when {@code spark.network.crypto.enabled} (or the
 * older {@code spark.authenticate.enableSaslEncryption}) is true, and with TLS when {@code
 * spark.ssl.rpc.enabled} is true (Spark 4 only; it inherits {@code spark.ssl.enabled}; Spark 3.5
 * has no TLS for RPC, and its {@code spark.ssl.*} settings leave shuffle traffic alone). One-sided
 * reads carry bytes unencrypted, so with any of these on, reads are delegated to Spark's own
 * transfer unless {@value ShuffleConf#PREFIX}{@value ShuffleConf#ALLOW_CLEARTEXT_READS} is true.
 *
 * @param encryptedBy the setting that turned Spark's wire encryption on, or null when it is off
 * @param delegate true when every block must go through Spark's own (encrypted) transfer
 * @param ioEncryption true when shuffle files are encrypted at rest ({@code
 *     spark.io.encryption.enabled}): block bytes then are ciphertext on any path
 */
public record WireEncryption(String encryptedBy, boolean delegate, boolean ioEncryption) {

  /**
   * Decides as Spark 4 encrypts ({@code spark.ssl.rpc.*} counts).
   *
   * @see #decide(Map, ShuffleConf, boolean)
   */
  public static WireEncryption decide(Map<String, String> sparkConf, ShuffleConf conf) {
    return decide(sparkConf, conf, true);
  }

  /**
   * Decides from the Spark settings (given as a map) and the parsed Memwire settings.
   *
   * @param tlsRpc true when the running Spark has TLS for its RPC ({@code spark.ssl.rpc.*}, Spark
   *     4; {@code SparkCompat.tlsRpcSupported()}): only then do the {@code spark.ssl} settings
   *     encrypt shuffle traffic
   * @throws TransferConfigException when reads must be delegated to Spark but {@value
   *     ShuffleConf#PREFIX}fallback=false forbids any block going through Spark
   */
  public static WireEncryption decide(
      Map<String, String> sparkConf, ShuffleConf conf, boolean tlsRpc) {
    String by = null;
    if (tlsRpc
        && flag(sparkConf, "spark.ssl.rpc.enabled", flag(sparkConf, "spark.ssl.enabled", false))) {
      by =
          sparkConf.containsKey("spark.ssl.rpc.enabled")
              ? "spark.ssl.rpc.enabled=true"
              : "spark.ssl.enabled=true";
    } else if (flag(sparkConf, "spark.network.crypto.enabled", false)) {
      by = "spark.network.crypto.enabled=true";
    } else if (flag(sparkConf, "spark.authenticate.enableSaslEncryption", false)) {
      by = "spark.authenticate.enableSaslEncryption=true";
    }
    boolean delegate = by != null && !conf.allowCleartextReads();
    if (delegate && !conf.fallback()) {
      throw new TransferConfigException(
          by
              + " makes Memwire read every shuffle block through "
              + "Spark's own encrypted transfer, which "
              + ShuffleConf.PREFIX
              + ShuffleSettings.FALLBACK
              + "=false forbids; set "
              + ShuffleConf.PREFIX
              + ShuffleSettings.FALLBACK
              + "=true, or "
              + ShuffleConf.PREFIX
              + ShuffleSettings.ALLOW_CLEARTEXT_READS
              + "=true to read one-sided unencrypted on an isolated fabric");
    }
    return new WireEncryption(by, delegate, flag(sparkConf, "spark.io.encryption.enabled", false));
  }

  private static boolean flag(Map<String, String> conf, String key, boolean def) {
    String v = conf.get(key);
    return v == null ? def : v.trim().toLowerCase(Locale.ROOT).equals("true");
  }

  /** The one line the manager logs about this decision, or null when there is nothing to say. */
  public String describe() {
    if (encryptedBy == null) {
      return ioEncryption
          ? "spark.io.encryption.enabled=true: block bytes are read one-sided as "
              + "Spark wrote them (encrypted); index entries and directory slots travel in clear"
          : null;
    }
    if (delegate) {
      return encryptedBy
          + ": Spark encrypts its network, so every shuffle block is read through "
          + "Spark's own encrypted transfer (no one-sided reads, no registration; "
          + ShuffleConf.PREFIX
          + ShuffleSettings.ALLOW_CLEARTEXT_READS
          + "=true reads one-sided "
          + "unencrypted on isolated fabrics)";
    }
    return encryptedBy
        + " but "
        + ShuffleConf.PREFIX
        + ShuffleSettings.ALLOW_CLEARTEXT_READS
        + "=true: shuffle blocks are read one-sided UNENCRYPTED on the wire"
        + (ioEncryption
            ? " (block bytes are ciphertext: spark.io.encryption.enabled=true; index "
                + "entries and directory slots are not)"
            : " (spark.io.encryption.enabled=false: block " + "bytes in clear)");
  }
}
