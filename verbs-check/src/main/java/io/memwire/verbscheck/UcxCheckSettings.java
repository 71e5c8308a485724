package io.memwire.verbscheck;

import io.memwire.transfer.TransferConfigBuilder;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ucx provider's settings for the ucx step, from system properties {@code
 * memwire.check.ucx.<setting>} ({@code device}, {@code ucxTransports}, {@code gidIndex}, {@code
 * ucxConfig}): on Soft-RoCE UCX's rc_verbs on {@code rxe0:1} with GID index 0, which the
 * worker-address wire-up over ud_verbs needs.
 */
final class UcxCheckSettings {
  private static final String[] KEYS = {"device", "ucxTransports", "gidIndex", "ucxConfig"};

  private UcxCheckSettings() {}

  /** The settings given, by Memwire setting name. */
  static Map<String, String> given() {
    Map<String, String> m = new LinkedHashMap<>();
    for (String k : KEYS) {
      String v = System.getProperty("memwire.check.ucx." + k);
      if (v != null && !v.isBlank()) {
        m.put(k, v);
      }
    }
    return m;
  }

  /** Applies the given settings to {@code b}. */
  static TransferConfigBuilder apply(TransferConfigBuilder b) {
    given().forEach(b::set);
    return b;
  }
}
