package io.memwire.transfer.verbs;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Device attributes the provider sizes itself by: {@code max_qp_rd_atom} (RDMA reads one queue pair
 * may have outstanding), {@code max_cqe} (entries of one completion queue) and {@code max_cq}
 * (completion queues of the device). DiSNI does not expose {@code ibv_query_device} and sysfs does
 * not carry them, so they come from {@code ibv_devinfo -v} (rdma-core's ibverbs-utils) when it is
 * installed, else from conservative defaults.
 */
final class DeviceLimits {
  /** What most NICs (mlx4, mlx5) allow; rxe allows 128. */
  static final int DEFAULT_MAX_QP_RD_ATOM = 16;

  static final int DEFAULT_MAX_CQE = 4096;

  /** {@link #maxCq} when the device did not say. */
  static final int UNKNOWN = 0;

  final int maxQpRdAtom;
  final int maxCqe;

  /** Completion queues the device allows, or {@link #UNKNOWN}. */
  final int maxCq;

  final String source;

  DeviceLimits(int maxQpRdAtom, int maxCqe, int maxCq, String source) {
    this.maxQpRdAtom = maxQpRdAtom;
    this.maxCqe = maxCqe;
    this.maxCq = maxCq;
    this.source = source;
  }

  private static final java.util.Map<String, DeviceLimits> CACHE =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** The limits of {@code device}, asked once per JVM. */
  static DeviceLimits query(String device) {
    return CACHE.computeIfAbsent(device, DeviceLimits::ask);
  }

  private static DeviceLimits ask(String device) {
    try {
      Process p =
          new ProcessBuilder("ibv_devinfo", "-v", "-d", device).redirectErrorStream(true).start();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (InputStream in = p.getInputStream()) {
        in.transferTo(out);
      }
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return defaults("ibv_devinfo did not finish");
      }
      return parse(out.toString(StandardCharsets.UTF_8), "ibv_devinfo -v -d " + device);
    } catch (IOException e) {
      return defaults("ibv_devinfo not available (" + e.getMessage() + ")");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return defaults("interrupted");
    }
  }

  static DeviceLimits parse(String devinfo, String source) {
    int atom = field(devinfo, "max_qp_rd_atom");
    int cqe = field(devinfo, "max_cqe");
    int cq = field(devinfo, "max_cq");
    if (atom <= 0) {
      return defaults(source + " printed no max_qp_rd_atom");
    }
    return new DeviceLimits(atom, cqe > 0 ? cqe : DEFAULT_MAX_CQE, cq > 0 ? cq : UNKNOWN, source);
  }

  private static int field(String text, String name) {
    Matcher m = Pattern.compile("\\b" + name + ":\\s*(\\d+)").matcher(text);
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  private static DeviceLimits defaults(String why) {
    return new DeviceLimits(DEFAULT_MAX_QP_RD_ATOM, DEFAULT_MAX_CQE, UNKNOWN, "defaults: " + why);
  }

  @Override
  public String toString() {
    return "max_qp_rd_atom="
        + maxQpRdAtom
        + ", max_cqe="
        + maxCqe
        + ", max_cq="
        + (maxCq == UNKNOWN ? "?" : Integer.toString(maxCq))
        + " ("
        + source
        + ")";
  }
}
