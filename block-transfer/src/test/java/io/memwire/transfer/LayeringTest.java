package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.spi.ProviderFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The API packages do not depend on the providers' packages; providers are found as services. */
class LayeringTest {
  private static final List<String> PROVIDER_PACKAGES =
      List.of("io/memwire/transfer/tcp/", "io/memwire/transfer/verbs/");

  @Test
  void apiAndSpiClassesNameNoProviderClass() throws Exception {
    Path classes =
        Path.of(TransferNode.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    assertTrue(Files.isDirectory(classes), "expected the compiled classes directory: " + classes);
    List<String> offenders = new ArrayList<>();
    int checked = 0;
    for (String pkg : List.of("io/memwire/transfer", "io/memwire/transfer/spi")) {
      try (Stream<Path> files = Files.list(classes.resolve(pkg))) {
        for (Path f :
            (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
          checked++;
          // Class names a class refers to sit in its constant pool as UTF-8 text.
          String pool = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
          for (String provider : PROVIDER_PACKAGES) {
            if (pool.contains(provider)) {
              offenders.add(classes.relativize(f) + " -> " + provider);
            }
          }
        }
      }
    }
    assertTrue(checked > 20, "checked only " + checked + " classes");
    assertEquals(List.of(), offenders);
  }

  @Test
  void bothProvidersAreFoundAsServices() throws IOException {
    List<ProviderKind> kinds = new ArrayList<>();
    ServiceLoader.load(ProviderFactory.class, LayeringTest.class.getClassLoader())
        .forEach(f -> kinds.add(f.kind()));
    assertEquals(List.of(ProviderKind.TCP, ProviderKind.VERBS), kinds);
  }
}
