package io.memwire.transfer.ucx;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.FabricSettings;
import java.io.File;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The UCX context settings a node's configuration asks for (keys without the {@code UCX_} prefix,
 * as {@code UcpParams.setConfig} takes them), and whether they name an RDMA transport.
 */
final class UcxSettings {
  /** UCX transport names (and aliases) that move bytes over RDMA hardware. */
  private static final Set<String> RDMA =
      Set.of(
          "rc",
          "rc_v",
          "rc_x",
          "rc_verbs",
          "rc_mlx5",
          "dc",
          "dc_x",
          "dc_mlx5",
          "ud",
          "ud_v",
          "ud_x",
          "ud_verbs",
          "ud_mlx5",
          "ib",
          "all");

  /** UCX's shared-memory transports: in UCX 1.13 none handles peer failure. */
  private static final Set<String> SHARED_MEMORY =
      Set.of("sm", "shm", "posix", "sysv", "cma", "knem", "xpmem", "self");

  private static final String SYSFS = "/sys/class/infiniband";

  private final Map<String, String> values;

  private UcxSettings(Map<String, String> values) {
    this.values = values;
  }

  /** Reads and checks the ucx part of {@code config}. */
  static UcxSettings of(TransferConfig config) {
    Map<String, String> m = new LinkedHashMap<>();
    String tls = config.get(FabricSettings.UCX_TRANSPORTS);
    if (tls != null) {
      m.put("TLS", tls);
    }
    config.device().ifPresent(d -> m.put("NET_DEVICES", d.contains(":") ? d : d + ":1"));
    config.gidIndex().ifPresent(g -> m.put("IB_GID_INDEX", String.valueOf(g)));
    config.trafficClass().ifPresent(t -> m.put("IB_TRAFFIC_CLASS", String.valueOf(t)));
    config.serviceLevel().ifPresent(s -> m.put("IB_SL", String.valueOf(s)));
    String extra = config.get(FabricSettings.UCX_CONFIG);
    if (extra != null) {
      for (String pair : extra.split(";")) {
        int eq = pair.indexOf('=');
        String name = pair.substring(0, eq).trim().toUpperCase(Locale.ROOT);
        if (name.startsWith("UCX_")) {
          name = name.substring(4);
        }
        if (name.equals("ERROR_SIGNALS")) {
          throw new TransferConfigException(
              FabricSettings.UCX_CONFIG.name()
                  + ": ERROR_SIGNALS is read from the environment when UCX loads; set "
                  + UcxLibrary.ERROR_SIGNALS
                  + "= in the JVM's environment instead");
        }
        if (m.containsKey(name)) {
          throw new TransferConfigException(
              FabricSettings.UCX_CONFIG.name()
                  + ": "
                  + name
                  + " is set by a Memwire key already (ucxTransports, device, gidIndex, "
                  + "trafficClass, serviceLevel); set it there");
        }
        m.put(name, pair.substring(eq + 1).trim());
      }
    }
    return new UcxSettings(Map.copyOf(m));
  }

  Map<String, String> values() {
    return values;
  }

  /**
   * The transports asked for (ucxTransports, else the environment's UCX_TLS, which UCX reads for
   * what the context does not set), or empty for UCX's own choice.
   */
  Optional<List<String>> transports() {
    String t = values.get("TLS");
    if (t == null) {
      t = System.getenv("UCX_TLS");
    }
    return t == null || t.isBlank() ? Optional.empty() : Optional.of(List.of(t.trim().split(",")));
  }

  /**
   * Whether endpoints ask UCX for peer-failure handling. UCX refuses it when only shared-memory
   * transports are named (they have no peer-failure handler); there a peer's end shows as the end
   * of its control connection instead, which every connection watches anyway.
   */
  boolean peerErrorHandling() {
    return transports()
        .map(t -> t.stream().anyMatch(x -> !SHARED_MEMORY.contains(x.replace("^", ""))))
        .orElse(true);
  }

  /**
   * Why UCX would not use RDMA here with these settings (for {@code provider=auto}), or empty: an
   * RDMA device must exist (the configured one, if any), UCX's verbs module must be installed, and
   * the transports, when given, must include an RDMA one.
   */
  Optional<String> whyNoRdma() {
    Optional<List<String>> tls = transports();
    if (tls.isPresent() && tls.get().stream().noneMatch(t -> RDMA.contains(t.replace("^", "")))) {
      return Optional.of(
          "the UCX transports " + String.join(",", tls.get()) + " include no RDMA transport");
    }
    String[] devices = new File(SYSFS).list();
    if (devices == null || devices.length == 0) {
      return Optional.of("no RDMA device found (" + SYSFS + " is empty)");
    }
    String dev = values.get("NET_DEVICES");
    if (dev != null) {
      String name = dev.substring(0, dev.indexOf(':'));
      if (!new File(SYSFS, name).exists()) {
        return Optional.of("the device " + name + " is not in " + SYSFS);
      }
    }
    if (!ibModuleInstalled()) {
      return Optional.of(
          "UCX's verbs module (libuct_ib.so) is not installed (Debian: it comes with libucx0)");
    }
    return Optional.empty();
  }

  private static boolean ibModuleInstalled() {
    for (String dir :
        List.of(
            "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")) {
      if (new File(dir, "libuct_ib.so.0").exists()
          || new File(dir, "ucx/libuct_ib.so.0").exists()) {
        return true;
      }
    }
    return false;
  }

  /** For the start-up line. */
  String describe() {
    return values.isEmpty()
        ? "UCX defaults (transports and devices of UCX's choice)"
        : values.toString();
  }
}
