package io.memwire.transfer.settings;

import java.time.Duration;
import java.util.Locale;

/**
 * Sizes and durations as written in configuration files: parsed from text, and bounds printed back
 * in the largest unit that holds them exactly (as documentation tables show them).
 */
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

  /** A count as digits. */
  static String plainText(long v) {
    return Long.toString(v);
  }

  private static final String[] BYTE_UNITS = {"", "k", "m", "g", "t", "p"};

  /** Bytes in the largest unit that divides them exactly; one below such a size as "2g-1". */
  static String bytesText(long v) {
    if (v <= 0) {
      return Long.toString(v);
    }
    String exact = exactBytes(v);
    if (exact.matches("\\d+") && v >= 1024 && v < Long.MAX_VALUE) {
      String above = exactBytes(v + 1);
      if (!above.matches("\\d+")) {
        return above + "-1";
      }
    }
    return exact;
  }

  private static String exactBytes(long v) {
    int u = 0;
    while (u < BYTE_UNITS.length - 1 && v % 1024 == 0) {
      v /= 1024;
      u++;
    }
    return v + BYTE_UNITS[u];
  }

  /** Milliseconds in the largest of ms, s, min, h that divides them exactly; 0 as "0". */
  static String millisText(long ms) {
    if (ms == 0) {
      return "0";
    }
    if (ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0) {
      return ms / 60_000 + "min";
    }
    if (ms % 1000 == 0) {
      return ms / 1000 + "s";
    }
    return ms + "ms";
  }
}
