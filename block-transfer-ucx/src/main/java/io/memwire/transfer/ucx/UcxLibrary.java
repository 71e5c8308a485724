package io.memwire.transfer.ucx;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Loads UCX through JUCX once, after checking what UCX reads from the environment when it loads:
 * {@code UCX_ERROR_SIGNALS} must be empty, or UCX installs handlers for signals the JVM itself uses
 * (SIGSEGV for null checks, for one).
 */
final class UcxLibrary {
  static final String ERROR_SIGNALS = "UCX_ERROR_SIGNALS";

  @GuardedBy("UcxLibrary.class")
  private static Optional<String> loadProblem;

  private UcxLibrary() {}

  /** Why UCX must not be loaded into this JVM, or empty. */
  static Optional<String> environmentProblem() {
    return environmentProblem(System.getenv(ERROR_SIGNALS));
  }

  /** {@link #environmentProblem()} for the value {@code v} of the variable (null: unset). */
  static Optional<String> environmentProblem(String v) {
    if (v == null || !v.isBlank()) {
      return Optional.of(
          ERROR_SIGNALS
              + (v == null ? " is not set" : "=" + v)
              + " in this JVM's environment; it must be set and empty (Spark: "
              + "spark.executorEnv."
              + ERROR_SIGNALS
              + "= and the same in the driver's environment), or UCX takes signals the JVM uses");
    }
    return Optional.empty();
  }

  /** Loads JUCX and libucp (once); why that failed, or empty. */
  static synchronized Optional<String> load() {
    if (loadProblem == null) {
      Optional<String> env = environmentProblem();
      if (env.isPresent()) {
        return env; // checked again next time: never load UCX with the JVM's signals at stake
      }
      loadProblem = tryLoad();
    }
    return loadProblem;
  }

  private static Optional<String> tryLoad() {
    try {
      Class.forName("org.openucx.jucx.NativeLibs", true, UcxLibrary.class.getClassLoader());
      org.openucx.jucx.NativeLibs.load();
      return Optional.empty();
    } catch (ClassNotFoundException | NoClassDefFoundError e) {
      return Optional.of("JUCX (org.openucx:jucx) is not on the class path");
    } catch (UnsatisfiedLinkError | ExceptionInInitializerError e) {
      return Optional.of(
          "UCX is not installed or cannot be loaded (libucp.so.0); install libucx0 (Debian, Ubuntu:"
              + " apt-get install libucx0) or your vendor's UCX: "
              + e.getMessage());
    }
  }

  /** Where this process loaded libucp from (for the start-up line), or "?". */
  static String libucpPath() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/maps"), StandardCharsets.UTF_8)) {
        int at = line.indexOf('/');
        if (at >= 0 && line.contains("/libucp.so")) {
          return line.substring(at);
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux, or /proc unreadable: the line just says so
    }
    return "?";
  }

  private static final java.util.regex.Pattern VERSION_STRING =
      java.util.regex.Pattern.compile("(?<![0-9.])(1\\.[0-9]{1,3}\\.[0-9]{1,3})\u0000");

  /**
   * The version of the libucp this process loaded, or "?". JUCX has no call for {@code
   * ucp_get_version} and the library's file name carries none (libucp.so.0.0.0), so it is read from
   * the library itself: the one NUL-terminated "1.x.y" string in it ({@code
   * ucp_get_version_string}'s constant).
   */
  static String ucxVersion() {
    String path = libucpPath();
    if (path.equals("?")) {
      return "?";
    }
    try {
      byte[] b = Files.readAllBytes(Path.of(path));
      java.util.regex.Matcher m =
          VERSION_STRING.matcher(new String(b, StandardCharsets.ISO_8859_1));
      java.util.Set<String> found = new java.util.LinkedHashSet<>();
      while (m.find()) {
        found.add(m.group(1));
      }
      return found.size() == 1 ? found.iterator().next() : "?";
    } catch (IOException | RuntimeException | OutOfMemoryError e) {
      return "?";
    }
  }

  /** The JUCX jar's version, from its Maven properties, or "?". */
  static String jucxVersion() {
    try (java.io.InputStream in =
        org.openucx.jucx.ucp.UcpContext.class.getResourceAsStream(
            "/META-INF/maven/org.openucx/jucx/pom.properties")) {
      if (in != null) {
        java.util.Properties p = new java.util.Properties();
        p.load(in);
        return p.getProperty("version", "?");
      }
    } catch (IOException e) {
      // the line says "?"
    }
    return "?";
  }
}
