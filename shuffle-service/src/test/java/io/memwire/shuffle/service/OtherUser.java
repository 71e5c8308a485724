package io.memwire.shuffle.service;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs programs as a second, unprivileged local user ({@code nobody}, uid 65534) next to the test,
 * which runs as root in CI: {@code setpriv} drops the privileges of a child process. The test's
 * class path is copied into a directory that user can read. Tests that need a second user skip with
 * {@link #unavailable()}'s one-line reason where this cannot work.
 */
final class OtherUser {
  static final int UID = 65534;
  static final String NAME = "nobody";

  private static String classPath;
  private static String reason;
  private static boolean probed;

  private OtherUser() {}

  /** Why no second user can be used here, or null when it can. */
  static synchronized String unavailable() {
    if (!probed) {
      probed = true;
      reason = probe();
    }
    return reason;
  }

  private static String probe() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return "not root: cannot run a process as another user";
    }
    try {
      Process p = new ProcessBuilder(command("-version")).redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        return "java does not run as " + NAME + " through setpriv";
      }
      return null;
    } catch (IOException e) {
      return "setpriv is not available: " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  private static List<String> command(String... javaArgs) {
    List<String> c = new ArrayList<>();
    c.add("setpriv");
    c.add("--reuid=" + UID);
    c.add("--regid=" + UID);
    c.add("--clear-groups");
    c.add("--");
    c.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    c.addAll(List.of(javaArgs));
    return c;
  }

  /** A directory both users can use: root's, 0755, for the files and sockets of a test. */
  static Path sharedDirectory() throws IOException {
    Path d =
        Files.createTempDirectory(
            "memwire-other-user-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
    return d;
  }

  /** A directory that belongs to the other user, inside {@code parent}. */
  static Path ownedDirectory(Path parent, String name) throws IOException {
    Path d = Files.createDirectory(parent.resolve(name));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.setAttribute(d, "unix:uid", UID);
    Files.setAttribute(d, "unix:gid", UID);
    return d;
  }

  /** Starts {@code main} of this test's classes as the other user. */
  static Process java(Class<?> main, String... args) throws IOException {
    List<String> javaArgs = new ArrayList<>();
    javaArgs.add("-cp");
    javaArgs.add(readableClassPath());
    javaArgs.add(main.getName());
    javaArgs.addAll(List.of(args));
    return new ProcessBuilder(command(javaArgs.toArray(new String[0])))
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
  }

  /** Starts a Perl program as the other user. */
  static Process perl(String program, String... args) throws IOException {
    List<String> c = new ArrayList<>(command());
    c.remove(c.size() - 1); // not java
    c.add("perl");
    c.add("-e");
    c.add(program);
    c.addAll(List.of(args));
    return new ProcessBuilder(c).redirectErrorStream(true).start();
  }

  /**
   * Reads a child's whole output (as it comes: a full pipe would stall the child) and waits for it
   * to end; a child still running after {@code seconds} is killed.
   */
  static String output(Process p, long seconds) throws Exception {
    Thread killer =
        new Thread(
            () -> {
              try {
                if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                  p.destroyForcibly();
                }
              } catch (InterruptedException e) {
                p.destroyForcibly();
              }
            },
            "other-user-deadline");
    killer.setDaemon(true);
    killer.start();
    byte[] out = p.getInputStream().readAllBytes();
    p.waitFor(seconds + 10, TimeUnit.SECONDS);
    killer.join(10_000);
    return new String(out, StandardCharsets.UTF_8);
  }

  private static synchronized String readableClassPath() throws IOException {
    if (classPath == null) {
      Path dir = sharedDirectory();
      List<String> entries = new ArrayList<>();
      int i = 0;
      for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
        Path src = Path.of(e);
        if (!Files.exists(src)) {
          continue;
        }
        Path dst = dir.resolve((i++) + "-" + src.getFileName());
        copy(src, dst);
        entries.add(dst.toString());
      }
      try (Stream<Path> all = Files.walk(dir)) {
        for (Path p : (Iterable<Path>) all::iterator) {
          Files.setPosixFilePermissions(
              p, PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
        }
      }
      classPath = String.join(File.pathSeparator, entries);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      TrustedPaths.deleteTree(dir);
                    } catch (IOException ignored) {
                      // a temporary directory
                    }
                  }));
    }
    return classPath;
  }

  private static void copy(Path src, Path dst) throws IOException {
    if (Files.isDirectory(src)) {
      try (Stream<Path> all = Files.walk(src)) {
        for (Path p : (Iterable<Path>) all::iterator) {
          Path to = dst.resolve(src.relativize(p).toString());
          if (Files.isDirectory(p)) {
            Files.createDirectories(to);
          } else {
            Files.copy(p, to);
          }
        }
      }
    } else {
      Files.copy(src, dst);
    }
  }
}
