package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConfig;
import java.io.File;
import java.util.Optional;

/**
 * Checks, without side effects beyond loading libdisni, whether the verbs provider can run here.
 * Every failure is one sentence a user can act on.
 */
public final class VerbsProbe {
  private VerbsProbe() {}

  /** Why verbs cannot be used with {@code config}, or empty when it can. */
  public static Optional<String> unavailableReason(TransferConfig config) {
    File[] devices = new File("/sys/class/infiniband").listFiles();
    if (devices == null || devices.length == 0) {
      return Optional.of("no RDMA device found (/sys/class/infiniband is empty or missing)");
    }
    try {
      System.loadLibrary("disni");
    } catch (UnsatisfiedLinkError e) {
      return Optional.of("libdisni is not loadable (" + e.getMessage() + "; java.library.path="
          + System.getProperty("java.library.path") + ")");
    }
    return Optional.empty();
  }
}
