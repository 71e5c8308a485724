package io.memwire.transfer.fabric;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * rdma_cm's per-port defaults in configfs, {@code
 * /sys/kernel/config/rdma_cm/<dev>/ports/<n>/default_roce_mode} and {@code default_roce_tos}: the
 * RoCE version and IP TOS (DSCP and ECN bits) of every connection rdma_cm makes on that port. DiSNI
 * cannot set GID or TOS per connection, so these are how a node chooses them. The device's
 * directory exists only once someone creates it ({@link #commands}); until then rdma_cm uses RoCE
 * v2 where the device supports it and TOS 0.
 *
 * @param device the RDMA device
 * @param port the port number
 * @param dir the port's configfs directory
 * @param mode {@code default_roce_mode} ({@code RoCE v2} or {@code IB/RoCE v1}), when set
 * @param tos {@code default_roce_tos}, when set
 */
public record RoceDefaults(
    String device, int port, Path dir, Optional<String> mode, OptionalInt tos) {
  /** The TOS commonly given to RoCE traffic: DSCP 26 with ECN-capable transport (ECT(0)). */
  public static final int RECOMMENDED_TOS = 106;

  /** The RoCE version rdma_cm should use. */
  public static final String RECOMMENDED_MODE = "RoCE v2";

  /**
   * Reads a port's defaults (both empty when configfs, rdma_cm or the device's directory is
   * absent).
   */
  public static RoceDefaults read(SysfsRoot root, String device, int port) {
    Path dir = root.rdmaCm().resolve(device).resolve("ports").resolve(Integer.toString(port));
    Optional<String> mode = text(dir.resolve("default_roce_mode"));
    OptionalInt tos = OptionalInt.empty();
    Optional<String> t = text(dir.resolve("default_roce_tos"));
    if (t.isPresent()) {
      try {
        tos = OptionalInt.of(Integer.parseInt(t.get()));
      } catch (NumberFormatException e) {
        tos = OptionalInt.empty();
      }
    }
    return new RoceDefaults(device, port, dir, mode, tos);
  }

  /** Whether the port's directory exists (someone created the device's directory). */
  public boolean configured() {
    return mode.isPresent() || tos.isPresent();
  }

  /** The RoCE version in effect: the configured one, else rdma_cm's default. */
  public String modeInEffect() {
    return mode.orElse(RECOMMENDED_MODE);
  }

  /** The TOS in effect: the configured one, else 0. */
  public int tosInEffect() {
    return tos.orElse(0);
  }

  /** Where the values come from, for a report. */
  public String source() {
    return configured() ? dir.toString() : "rdma_cm's built-in defaults (" + dir + " absent)";
  }

  /**
   * The shell commands (as root) that set RoCE v2 and {@code tos} on this port; the settings last
   * until reboot or until rdma_cm is unloaded, so put them in a boot script.
   */
  public String commands(int wantedTos) {
    Path devDir = dir.getParent().getParent();
    return "modprobe rdma_cm; mountpoint -q /sys/kernel/config || mount -t configfs none"
        + " /sys/kernel/config; mkdir -p "
        + devDir
        + " && echo '"
        + RECOMMENDED_MODE
        + "' > "
        + dir.resolve("default_roce_mode")
        + " && echo "
        + wantedTos
        + " > "
        + dir.resolve("default_roce_tos");
  }

  private static Optional<String> text(Path f) {
    try {
      return Optional.of(new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).strip());
    } catch (IOException e) { // absent: not configured
      return Optional.empty();
    }
  }
}
