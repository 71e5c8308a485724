package io.memwire.transfer.verbs;

import io.memwire.transfer.settings.TransportSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The locked-memory limit ({@code ulimit -l}) of this process, read from a {@code
 * /proc/<pid>/limits} file. Registered memory is pinned and counts against it, so it must cover the
 * registration budget.
 */
public final class MemlockLimit {
  /** This process. */
  public static final Path PROC_SELF_LIMITS = Path.of("/proc/self/limits");

  private final OptionalLong softBytes;
  private final OptionalLong hardBytes;

  private MemlockLimit(OptionalLong soft, OptionalLong hard) {
    this.softBytes = soft;
    this.hardBytes = hard;
  }

  /**
   * Parses the "Max locked memory" line of a limits file.
   *
   * @return empty when the file or the line is missing
   */
  public static Optional<MemlockLimit> read(Path limitsFile) {
    String text;
    try {
      text = new String(Files.readAllBytes(limitsFile), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      return Optional.empty();
    }
    for (String line : text.split("\n")) {
      if (line.startsWith("Max locked memory")) {
        String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
        if (f.length >= 2) {
          return Optional.of(new MemlockLimit(parse(f[0]), parse(f[1])));
        }
      }
    }
    return Optional.empty();
  }

  private static OptionalLong parse(String s) {
    if (s.equalsIgnoreCase("unlimited")) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(s));
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
  }

  /** The soft limit in bytes; empty = unlimited. */
  public OptionalLong softBytes() {
    return softBytes;
  }

  /** The hard limit in bytes; empty = unlimited. */
  public OptionalLong hardBytes() {
    return hardBytes;
  }

  /** True when {@code bytes} may be pinned under the soft limit. */
  public boolean allows(long bytes) {
    return softBytes.isEmpty() || softBytes.getAsLong() >= bytes;
  }

  /** e.g. "unlimited" or "65536 bytes (64 KiB)". */
  public String describeSoft() {
    if (softBytes.isEmpty()) {
      return "unlimited";
    }
    long b = softBytes.getAsLong();
    return b + " bytes (" + (b >> 10) + " KiB)";
  }

  /**
   * Why a provider that pins what it registers cannot start: the soft limit in {@code memlock} is
   * below the registration {@code budget} (empty when it is not, or the limit is unknown).
   */
  public static Optional<String> budgetProblem(Optional<MemlockLimit> memlock, long budget) {
    if (memlock.isEmpty() || memlock.get().allows(budget)) {
      return Optional.empty();
    }
    return Optional.of(
        "the locked-memory limit (ulimit -l) is "
            + memlock.get().describeSoft()
            + ", below "
            + TransportSettings.REGISTRATION_BUDGET.name()
            + "="
            + budget
            + " bytes; raise memlock (limits.conf, systemd LimitMEMLOCK, container ulimits) or"
            + " lower "
            + TransportSettings.REGISTRATION_BUDGET.name());
  }

  /**
   * The message of a failed {@code ibv_reg_mr}: the error, the process's memlock limit (from {@code
   * limits}, or "unknown") and the setting it must cover, with both fixes.
   */
  public static String pinFailure(
      int length, String device, String error, Optional<MemlockLimit> limits, long budget) {
    return "ibv_reg_mr of "
        + length
        + " bytes failed on "
        + device
        + ": "
        + error
        + "; pinned memory counts against the memlock limit (ulimit -l), now "
        + limits.map(MemlockLimit::describeSoft).orElse("unknown")
        + ", which must cover "
        + TransportSettings.REGISTRATION_BUDGET.name()
        + "="
        + budget
        + " bytes; raise memlock (limits.conf, systemd LimitMEMLOCK) or lower "
        + TransportSettings.REGISTRATION_BUDGET.name();
  }
}
