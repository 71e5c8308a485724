package io.memwire.shuffle.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.protocol.ServiceClient;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar on a NodeManager's classpath: Hadoop's client jars and the SLF4J 1.7 that Hadoop
 * ships, nothing else of Memwire. The aux service must start, take an output, end its application
 * and stop from that jar alone, and the jar must add no class but Memwire's and DiSNI's to the
 * NodeManager.
 */
class NodeManagerClasspathIT {
  @TempDir Path root;

  private static Path jar() {
    return Path.of(System.getProperty("memwire.yarn.jar"));
  }

  @Test
  void theJarHoldsOnlyMemwireDisniAndRocksDbClasses() throws IOException {
    List<String> classes = new ArrayList<>();
    try (ZipFile z = new ZipFile(jar().toFile())) {
      for (ZipEntry e : Collections.list(z.entries())) {
        if (e.getName().endsWith(".class")) {
          classes.add(e.getName());
        }
      }
    }
    assertTrue(classes.contains("io/memwire/shuffle/yarn/MemwireYarnShuffleService.class"));
    assertTrue(classes.contains("io/memwire/shuffle/service/ShuffleService.class"));
    assertTrue(classes.contains("io/memwire/shuffle/protocol/ServiceProtocol.class"));
    assertTrue(classes.contains("io/memwire/shuffle/directory/ShuffleDirectory.class"));
    assertTrue(classes.contains("io/memwire/transfer/TransferNode.class"));
    assertTrue(classes.contains("com/ibm/disni/RdmaEndpoint.class"));
    assertTrue(classes.contains("org/rocksdb/RocksDB.class"), "the recovery store");
    List<String> foreign =
        classes.stream()
            .filter(
                c ->
                    !c.startsWith("io/memwire/")
                        && !c.startsWith("com/ibm/disni/")
                        && !c.startsWith("org/rocksdb/"))
            .toList();
    assertTrue(foreign.isEmpty(), "classes other than Memwire's, DiSNI's, RocksDB's: " + foreign);
  }

  @Test
  void theAuxServiceRunsFromTheJarOnHadoopsClasspath() throws Exception {
    List<URL> urls = new ArrayList<>();
    urls.add(jar().toUri().toURL());
    try (Stream<Path> lib =
        Files.list(Path.of(System.getProperty("memwire.yarn.nodemanagerLib")))) {
      for (Path p : (Iterable<Path>) lib::iterator) {
        urls.add(p.toUri().toURL());
      }
    }
    Path socket = root.resolve("run/memwire.sock");
    ClassLoader previous = Thread.currentThread().getContextClassLoader();
    // The platform loader as parent: no class of this test's classpath is visible.
    try (URLClassLoader nm =
            new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        ServerSocket driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread.currentThread().setContextClassLoader(nm);
      Class<?> confClass = nm.loadClass("org.apache.hadoop.conf.Configuration");
      Object conf = confClass.getConstructor(boolean.class).newInstance(false);
      Method set = confClass.getMethod("set", String.class, String.class);
      set.invoke(conf, "memwire.shuffle.service.socket", socket.toString());
      set.invoke(conf, "memwire.shuffle.service.dir", root.resolve("outputs").toString());
      set.invoke(conf, "memwire.shuffle.service.transfer.provider", "tcp");
      set.invoke(conf, "memwire.shuffle.service.transfer.bindAddress", "127.0.0.1");

      Class<?> auxClass = nm.loadClass(MemwireYarnShuffleService.class.getName());
      assertEquals(nm, auxClass.getClassLoader(), "loaded from the jar, not the test classpath");
      Object aux = auxClass.getConstructor().newInstance();
      invoke(aux, "init", new Class<?>[] {confClass}, conf);
      invoke(aux, "start", new Class<?>[0]);
      try {
        assertTrue(Files.exists(socket), "listening");
        Path exec = root.resolve("exec");
        Files.createDirectories(exec);
        Path index = exec.resolve("shuffle_0_7_0.index");
        Path data = exec.resolve("shuffle_0_7_0.data");
        Files.write(
            index,
            ByteBuffer.allocate(24)
                .order(ByteOrder.BIG_ENDIAN)
                .putLong(0)
                .putLong(3)
                .putLong(5)
                .array());
        Files.write(data, new byte[] {1, 2, 3, 4, 5});

        Class<?> appIdClass = nm.loadClass("org.apache.hadoop.yarn.api.records.ApplicationId");
        Object appId =
            appIdClass
                .getMethod("newInstance", long.class, int.class)
                .invoke(null, 1_700_000_000_000L, 9);
        String attempt = appId + "_1";
        try (ServiceClient c =
            ServiceClient.connect(
                socket,
                new ServiceClient.Registration(
                    attempt, "1", new byte[32], "127.0.0.1", driver.getLocalPort()),
                Duration.ofSeconds(10))) {
          c.publish(0, 0, 7, index, data);
        }
        Path held = root.resolve("outputs/apps/" + attempt + "@" + System.getProperty("user.name"));
        assertTrue(
            Files.isDirectory(held),
            () -> {
              try (Stream<Path> l = Files.list(root.resolve("outputs/apps"))) {
                return "the service holds the output in " + held + "; apps: " + l.toList();
              } catch (java.io.IOException e) {
                return e.toString();
              }
            });

        Class<?> ctxClass =
            nm.loadClass("org.apache.hadoop.yarn.server.api.ApplicationTerminationContext");
        Object ctx = ctxClass.getConstructor(appIdClass).newInstance(appId);
        invoke(aux, "stopApplication", new Class<?>[] {ctxClass}, ctx);
        assertFalse(Files.exists(held), "the application's outputs deleted");
      } finally {
        invoke(aux, "stop", new Class<?>[0]);
      }
      assertFalse(Files.exists(socket), "socket removed at stop");
    } finally {
      Thread.currentThread().setContextClassLoader(previous);
    }
  }

  private static Object invoke(Object target, String name, Class<?>[] types, Object... args)
      throws Exception {
    try {
      return target.getClass().getMethod(name, types).invoke(target, args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof Exception) {
        throw (Exception) e.getCause();
      }
      throw e;
    }
  }
}
