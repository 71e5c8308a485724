package io.memwire.transfer.fabric;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A recorded sysfs tree ({@code fabric/<name>.tree} on the test class path: one {@code path
 * content} line per file) written out under a directory, so counter readers can be tested on the
 * host; {@link #set} changes a file between samples. In the test jar: transfer-tools' tests use it.
 */
public final class RecordedSysfs {
  private final Path root;

  private RecordedSysfs(Path root) {
    this.root = root;
  }

  /** Writes the named trees (e.g. {@code "rxe"}, {@code "mlx5"}) under {@code dir}. */
  public static RecordedSysfs write(Path dir, String... names) {
    for (String name : names) {
      String resource = "fabric/" + name + ".tree";
      try (InputStream in = RecordedSysfs.class.getClassLoader().getResourceAsStream(resource)) {
        if (in == null) {
          throw new IllegalArgumentException("no test resource " + resource);
        }
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          if (line.isBlank() || line.startsWith("#")) {
            continue;
          }
          int sp = line.indexOf(' ');
          Path f = dir.resolve(line.substring(0, sp));
          Files.createDirectories(f.getParent());
          Files.writeString(f, line.substring(sp + 1) + "\n");
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return new RecordedSysfs(dir);
  }

  /** The tree's root, to read as {@code /sys}. */
  public SysfsRoot root() {
    return new SysfsRoot(root);
  }

  /** Sets one file (a path under the root) to {@code value}. */
  public void set(String path, long value) {
    try {
      Path f = root.resolve(path);
      Files.createDirectories(f.getParent());
      Files.writeString(f, Long.toUnsignedString(value) + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
