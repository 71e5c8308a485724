package io.memwire.tools.doctor;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where the loaded libdisni lives and whether it exports the JNI functions DiSNI's Java classes
 * call. A libdisni built from another DiSNI version loads fine and reports a version, but a missing
 * function only shows up as an {@link UnsatisfiedLinkError} on first use; comparing the names up
 * front catches that.
 */
final class NativeLibrary {
  /** DiSNI's class whose native methods libdisni implements. */
  static final String DISPATCHER = "com.ibm.disni.verbs.impl.NativeDispatcher";

  static final String FILE_NAME = System.mapLibraryName("disni");
  static final Path PROC_SELF_MAPS = Path.of("/proc/self/maps");

  private NativeLibrary() {}

  /** The file a loaded library was mapped from, per a {@code /proc/<pid>/maps} file. */
  static Optional<Path> loadedFrom(Path maps, String fileName) {
    try {
      for (String line : Files.readAllLines(maps, StandardCharsets.UTF_8)) {
        int slash = line.indexOf('/');
        if (slash < 0) {
          continue;
        }
        String path = line.substring(slash).trim();
        if (path.endsWith(" (deleted)")) {
          path = path.substring(0, path.length() - " (deleted)".length());
        }
        if (Path.of(path).getFileName().toString().equals(fileName)) {
          return Optional.of(Path.of(path));
        }
      }
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }

  /** The first {@code fileName} in the directories of a {@code java.library.path} value. */
  static Optional<Path> onLibraryPath(String libraryPath, String fileName) {
    if (libraryPath == null) {
      return Optional.empty();
    }
    for (String dir : libraryPath.split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isRegularFile(Path.of(dir, fileName))) {
        return Optional.of(Path.of(dir, fileName));
      }
    }
    return Optional.empty();
  }

  /** The JNI function names {@code cls}'s native methods bind to (short form: no overloads). */
  static Set<String> expectedSymbols(Class<?> cls) {
    Set<String> out = new TreeSet<>();
    for (Method m : cls.getDeclaredMethods()) {
      if (Modifier.isNative(m.getModifiers())) {
        out.add("Java_" + mangle(cls.getName()) + "_" + mangle(m.getName()));
      }
    }
    return out;
  }

  /** JNI name mangling (JNI specification, "Resolving Native Method Names"). */
  static String mangle(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) {
      if (c == '.' || c == '/') {
        b.append('_');
      } else if (c == '_') {
        b.append("_1");
      } else if (c == ';') {
        b.append("_2");
      } else if (c == '[') {
        b.append("_3");
      } else if (c < 128 && Character.isLetterOrDigit(c)) {
        b.append(c);
      } else {
        b.append(String.format("_0%04x", (int) c));
      }
    }
    return b.toString();
  }

  /**
   * The JNI function names (strings starting with {@code Java_}) in a library file: its dynamic
   * string table holds every exported name, NUL-terminated.
   */
  static Set<String> jniNames(Path library) throws IOException {
    byte[] bytes = Files.readAllBytes(library);
    Set<String> out = new TreeSet<>();
    int start = 0;
    for (int i = 0; i <= bytes.length; i++) {
      if (i == bytes.length || bytes[i] == 0) {
        if (i - start > 5
            && bytes[start] == 'J'
            && bytes[start + 1] == 'a'
            && bytes[start + 2] == 'v'
            && bytes[start + 3] == 'a'
            && bytes[start + 4] == '_') {
          out.add(new String(bytes, start, i - start, StandardCharsets.US_ASCII));
        }
        start = i + 1;
      }
    }
    return out;
  }

  /** The names in {@code expected} that {@code present} lacks. */
  static List<String> missing(Set<String> expected, Set<String> present) {
    List<String> out = new ArrayList<>();
    for (String e : expected) {
      if (!present.contains(e)) {
        out.add(e);
      }
    }
    return out;
  }

  /** DiSNI's version from its jar's Maven metadata, or "unknown". */
  static String disniVersion(ClassLoader loader) {
    try (InputStream in =
        loader.getResourceAsStream("META-INF/maven/com.ibm.disni/disni/pom.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      return "unknown";
    }
  }

  /** DiSNI's dispatcher class, not initialized (initializing it loads libdisni). */
  static Optional<Class<?>> dispatcher() {
    try {
      return Optional.of(Class.forName(DISPATCHER, false, NativeLibrary.class.getClassLoader()));
    } catch (ClassNotFoundException | LinkageError e) {
      return Optional.empty();
    }
  }
}
