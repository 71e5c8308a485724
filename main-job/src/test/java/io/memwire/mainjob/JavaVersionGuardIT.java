package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.jar.JarFile;
import java.util.zip.ZipFile;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * The -spark jar is a multi-release jar: a JVM older than Java 17 loads a Java 8 class under the
 * manager's name that fails with a message naming the fix; Java 17 and newer load the real manager.
 * Older JVMs are simulated by reading the jar's base entries (what they see).
 */
class JavaVersionGuardIT {
  private static final String MANAGER = "io/memwire/shuffle/RdmaShuffleManager.class";

  private static Path bundle() {
    String version = System.getProperty("project.version");
    return Paths.get(
        "..", "shuffle-manager", "target", "memwire-shuffle-manager-" + version + "-spark.jar");
  }

  private static int majorVersion(byte[] classFile) {
    return ((classFile[6] & 0xff) << 8) | (classFile[7] & 0xff);
  }

  private static byte[] entry(JarFile jar, String name) throws IOException {
    try (InputStream in = jar.getInputStream(jar.getJarEntry(name))) {
      return in.readAllBytes();
    }
  }

  @Test
  void java17LoadsTheRealManagerAndOlderJvmsTheGuard() throws Exception {
    try (JarFile base =
            new JarFile(bundle().toFile(), true, ZipFile.OPEN_READ, JarFile.baseVersion());
        JarFile runtime =
            new JarFile(bundle().toFile(), true, ZipFile.OPEN_READ, Runtime.version())) {
      assertTrue(runtime.isMultiRelease(), "Multi-Release: true in the manifest");
      byte[] guard = entry(base, MANAGER);
      byte[] real = entry(runtime, MANAGER);
      assertEquals(52, majorVersion(guard), "the base entry is Java 8 bytecode");
      assertEquals(61, majorVersion(real), "Java 17 bytecode under META-INF/versions/17");
      assertArrayEquals(
          Files.readAllBytes(
              Paths.get("..", "shuffle-manager", "target", "classes").resolve(MANAGER)),
          real,
          "the versioned entry is the compiled manager");
    }
    // Java 17 (this JVM): the jar's class loader picks the versioned entry.
    try (URLClassLoader loader =
        new URLClassLoader(new URL[] {bundle().toUri().toURL()}, new WithoutMemwire())) {
      Class<?> c = Class.forName("io.memwire.shuffle.RdmaShuffleManager", false, loader);
      assertEquals(loader, c.getClassLoader(), "loaded from the jar");
      assertNotNull(c.getMethod("current"), "the real manager");
    }
  }

  @Test
  void theGuardFailsWithAMessageNamingTheFix() throws Exception {
    byte[] guard;
    try (JarFile base =
        new JarFile(bundle().toFile(), true, ZipFile.OPEN_READ, JarFile.baseVersion())) {
      guard = entry(base, MANAGER);
    }
    Class<?> c = new BaseEntryLoader(guard).loadClass("io.memwire.shuffle.RdmaShuffleManager");
    InvocationTargetException e =
        assertThrows(
            InvocationTargetException.class,
            () ->
                c.getConstructor(SparkConf.class, boolean.class)
                    .newInstance(new SparkConf(false), false));
    IllegalStateException cause = assertInstanceOf(IllegalStateException.class, e.getCause());
    assertTrue(cause.getMessage().contains("needs Java 17"), cause.getMessage());
    assertTrue(cause.getMessage().contains("this executor runs Java"), cause.getMessage());
    assertTrue(cause.getMessage().contains("spark.executorEnv.JAVA_HOME"), cause.getMessage());
  }

  /** Spark and the JDK from this JVM, but no Memwire class: those must come from the jar. */
  private static final class WithoutMemwire extends ClassLoader {
    WithoutMemwire() {
      super(SparkConf.class.getClassLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.startsWith("io.memwire.")) {
        throw new ClassNotFoundException(name);
      }
      return super.loadClass(name, resolve);
    }
  }

  /** Defines the manager's name from the given bytes, everything else from the parent. */
  private static final class BaseEntryLoader extends ClassLoader {
    private final byte[] bytes;

    BaseEntryLoader(byte[] bytes) {
      super(SparkConf.class.getClassLoader());
      this.bytes = bytes;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.equals("io.memwire.shuffle.RdmaShuffleManager")) {
        synchronized (getClassLoadingLock(name)) {
          Class<?> c = findLoadedClass(name);
          return c != null ? c : defineClass(name, bytes, 0, bytes.length);
        }
      }
      return super.loadClass(name, resolve);
    }
  }
}
