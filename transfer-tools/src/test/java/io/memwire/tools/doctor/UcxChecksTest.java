package io.memwire.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.verbs.FakeSysfs;
import io.memwire.transfer.verbs.RdmaInventory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The doctor's ucx checks with a given class path, environment, libucp and RDMA rule. */
class UcxChecksTest {
  @TempDir Path tmp;

  private final List<Path> loaded = new ArrayList<>();

  private UcxChecks ucx(
      ProviderKind p,
      boolean jars,
      Map<String, String> env,
      Optional<Path> lib,
      Optional<String> noRdma) {
    return new UcxChecks(
        TransferConfig.builder().provider(p).build(),
        c -> jars,
        env::get,
        () -> lib,
        f -> {
          loaded.add(f);
          return Optional.empty();
        },
        () -> noRdma);
  }

  private static Check byName(List<Check> cs, String name) {
    return cs.stream()
        .filter(c -> c.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " in " + cs));
  }

  @Test
  void missingJarsFailProviderUcxAndAreOnlyNotedOtherwise() {
    List<Check> cs =
        ucx(ProviderKind.UCX, false, Map.of(), Optional.empty(), Optional.empty()).run();
    assertEquals(1, cs.size(), cs.toString());
    assertEquals(Check.Status.FAIL, cs.get(0).status());
    assertTrue(cs.get(0).finding().contains("memwire-block-transfer-ucx"), cs.toString());
    assertTrue(cs.get(0).advice().contains("lib/ucx/*"), cs.toString());
    cs = ucx(ProviderKind.AUTO, false, Map.of(), Optional.empty(), Optional.empty()).run();
    assertEquals(Check.Status.OK, cs.get(0).status());
    assertTrue(
        cs.get(0).finding().endsWith("(provider=auto will not consider ucx)"), cs.toString());
  }

  @Test
  void errorSignalsMustBeSetEmptyAndLibucpIsNotLoadedOtherwise() {
    Path lib = tmp.resolve("libucp.so.0");
    List<Check> cs =
        ucx(ProviderKind.UCX, true, Map.of(), Optional.of(lib), Optional.empty()).run();
    Check env = byName(cs, "ucx-env");
    assertEquals(Check.Status.FAIL, env.status());
    assertTrue(env.finding().startsWith("UCX_ERROR_SIGNALS is not set"), env.finding());
    assertTrue(env.advice().contains("spark.executorEnv.UCX_ERROR_SIGNALS="), env.advice());
    assertTrue(byName(cs, "libucp").finding().contains("not loaded"), cs.toString());
    assertEquals(List.of(), loaded, "libucp must not be loaded with UCX_ERROR_SIGNALS unset");
    cs =
        ucx(
                ProviderKind.AUTO,
                true,
                Map.of("UCX_ERROR_SIGNALS", "SIGSEGV"),
                Optional.of(lib),
                Optional.empty())
            .run();
    assertEquals(Check.Status.WARN, byName(cs, "ucx-env").status());
    assertTrue(byName(cs, "ucx-env").finding().startsWith("UCX_ERROR_SIGNALS=SIGSEGV"));
    cs =
        ucx(
                ProviderKind.UCX,
                true,
                Map.of("UCX_ERROR_SIGNALS", ""),
                Optional.of(lib),
                Optional.empty())
            .run();
    assertEquals(Check.Status.OK, byName(cs, "ucx-env").status());
    assertEquals(Check.Status.OK, byName(cs, "libucp").status());
    assertEquals(List.of(lib), loaded);
  }

  @Test
  void aMissingLibucpNamesThePackage() {
    List<Check> cs =
        ucx(
                ProviderKind.UCX,
                true,
                Map.of("UCX_ERROR_SIGNALS", ""),
                Optional.empty(),
                Optional.empty())
            .run();
    Check lib = byName(cs, "libucp");
    assertEquals(Check.Status.FAIL, lib.status());
    assertTrue(lib.advice().contains("apt-get install libucx0"), lib.advice());
  }

  @Test
  void rdmaRuleIsReported() {
    Map<String, String> env = Map.of("UCX_ERROR_SIGNALS", "");
    List<Check> cs =
        ucx(
                ProviderKind.AUTO,
                true,
                env,
                Optional.of(tmp.resolve("libucp.so.0")),
                Optional.of("no RDMA device found (/sys/class/infiniband is empty)"))
            .run();
    Check r = byName(cs, "ucx-rdma");
    assertEquals(Check.Status.WARN, r.status());
    assertTrue(r.finding().contains("no RDMA device found"), r.finding());
    cs = ucx(ProviderKind.TCP, true, env, Optional.empty(), Optional.of("x")).run();
    for (Check c : cs) {
      assertEquals(Check.Status.OK, c.status(), c.line());
    }
  }

  @Test
  void findsLibucpInTheGivenDirectories() throws Exception {
    Path a = Files.createDirectories(tmp.resolve("a"));
    Path b = Files.createDirectories(tmp.resolve("b"));
    Files.writeString(b.resolve("libucp.so.0"), "");
    assertEquals(Optional.of(b.resolve("libucp.so.0")), UcxChecks.findLibucp(List.of(a, b)));
    assertEquals(Optional.empty(), UcxChecks.findLibucp(List.of(a)));
  }

  @Test
  void autoPicksUcxWhenVerbsCannotRunAndUcxOffersRdma() {
    FakeSysfs fs = new FakeSysfs(tmp);
    Path limits = fs.limits("unlimited", "unlimited");
    TransferConfig auto = TransferConfig.builder().provider(ProviderKind.AUTO).build();
    Map<String, String> env = Map.of("UCX_ERROR_SIGNALS", "");
    List<Check> cs =
        new SystemChecks(
                auto,
                new RdmaInventory(fs.root(), n -> List.of()),
                limits,
                Optional::empty,
                () -> OptionalInt.of(32),
                false)
            .withUcx(
                new UcxChecks(
                    auto,
                    c -> true,
                    env::get,
                    () -> Optional.of(tmp.resolve("libucp.so.0")),
                    f -> Optional.empty(),
                    Optional::empty))
            .run();
    Check p = byName(cs, "provider");
    assertTrue(
        p.finding().startsWith("provider=auto will use ucx (auto: verbs not used because no RDMA"),
        p.finding());
    assertTrue(p.finding().endsWith("UCX offers an RDMA transport)"), p.finding());
    cs =
        new SystemChecks(
                auto,
                new RdmaInventory(fs.root(), n -> List.of()),
                limits,
                Optional::empty,
                () -> OptionalInt.of(32),
                false)
            .run();
    p = byName(cs, "provider");
    assertTrue(p.finding().contains("ucx not used because the ucx provider"), p.finding());
    assertTrue(p.finding().startsWith("provider=auto will use tcp"), p.finding());
  }
}
