package io.memwire.transfer.settings;

import java.time.Duration;
import java.util.Locale;

/** Parsers for sizes and durations as written in configuration files. */
public final class Units {
  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;
  private static final long GIB = 1024 * MIB;

  private Units() {}

  /**
   * Parses {@code 4096}, {@code 64k}, {@code 1m}, {@code 2g}, {@code 1t}, {@code 1p} (also kb, mb,
   * ...).
   */
  public static long parseBytes(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (s.endsWith("b") && s.length() > 1 && !Character.isDigit(s.charAt(s.length() - 2))) {
      s = s.substring(0, s.length() - 1);
    }
    long mult = 1;
    char last = s.charAt(s.length() - 1);
    if (!Character.isDigit(last)) {
      mult =
          switch (last) {
            case 'k' -> KIB;
            case 'm' -> MIB;
            case 'g' -> GIB;
            case 't' -> 1024 * GIB;
            case 'p' -> 1024 * 1024 * GIB;
            case 'b' -> 1;
            default -> throw new IllegalArgumentException(v);
          };
      s = s.substring(0, s.length() - 1);
    }
    return Math.multiplyExact(Long.parseLong(s.trim()), mult);
  }

  /** Parses {@code 500} (ms), {@code 500ms}, {@code 10s}, {@code 2min}, {@code 1h}. */
  public static Duration parseTime(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (s.endsWith("ms")) {
      return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2).trim()));
    } else if (s.endsWith("min")) {
      return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 3).trim()));
    } else if (s.endsWith("s")) {
      return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    } else if (s.endsWith("m")) {
      return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    } else if (s.endsWith("h")) {
      return Duration.ofHours(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    }
    return Duration.ofMillis(Long.parseLong(s));
  }
}
