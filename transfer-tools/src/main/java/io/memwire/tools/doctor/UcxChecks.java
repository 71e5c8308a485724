package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.ProviderFactory;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The ucx provider's checks: its jar and JUCX on the class path ({@code ucx-jars}), {@code
 * UCX_ERROR_SIGNALS} set and empty ({@code ucx-env}), libucp found and loadable ({@code libucp}),
 * and whether UCX would use RDMA by the rule {@code provider=auto} applies ({@code ucx-rdma}). They
 * matter with {@code provider=ucx} (FAIL: the node refuses to start) and with {@code auto} when the
 * ucx jars are shipped (WARN: auto will not fall back to ucx); otherwise each is OK and says it is
 * not used.
 */
final class UcxChecks {
  static final String FACTORY = "io.memwire.transfer.ucx.UcxProviderFactory";
  static final String JUCX = "org.openucx.jucx.ucp.UcpContext";
  static final String ERROR_SIGNALS = "UCX_ERROR_SIGNALS";
  static final String LIBUCP = "libucp.so.0";
  private static final String INSTALL =
      "install libucx0 (Debian, Ubuntu: apt-get install libucx0; RHEL: ucx) or your vendor's UCX";

  private final TransferConfig config;
  private final Predicate<String> onClassPath;
  private final Function<String, String> env;
  private final Supplier<Optional<Path>> libucpFile;
  private final Function<Path, Optional<String>> load;
  private final Supplier<Optional<String>> whyNoRdma;

  /**
   * @param onClassPath whether a class is on the class path
   * @param env the process environment (null: unset)
   * @param libucpFile where libucp is
   * @param load loads a library file; why that failed, or empty
   * @param whyNoRdma why the ucx factory, asked with provider=auto, refuses, or empty
   */
  UcxChecks(
      TransferConfig config,
      Predicate<String> onClassPath,
      Function<String, String> env,
      Supplier<Optional<Path>> libucpFile,
      Function<Path, Optional<String>> load,
      Supplier<Optional<String>> whyNoRdma) {
    this.config = config;
    this.onClassPath = onClassPath;
    this.env = env;
    this.libucpFile = libucpFile;
    this.load = load;
    this.whyNoRdma = whyNoRdma;
  }

  /** This machine and this JVM. */
  static UcxChecks system(TransferConfig config) {
    return new UcxChecks(
        config,
        UcxChecks::loadable,
        System::getenv,
        () -> findLibucp(searchPath()),
        UcxChecks::loadFile,
        () -> factoryRule(config));
  }

  /** The ucx jars are absent (for checks against a fake sysfs tree). */
  static UcxChecks absent(TransferConfig config) {
    return new UcxChecks(
        config,
        c -> false,
        v -> null,
        Optional::empty,
        f -> Optional.empty(),
        () -> Optional.of("the ucx provider is not on the class path"));
  }

  List<Check> run() {
    List<Check> out = new ArrayList<>();
    ProviderKind want = config.provider();
    boolean provider = onClassPath.test(FACTORY);
    boolean jucx = onClassPath.test(JUCX);
    String advice =
        "add lib/ucx/* of the distribution (bin/memwire does when it is there) or"
            + " memwire-block-transfer-ucx and org.openucx:jucx to the class path";
    if (provider && jucx) {
      out.add(Check.ok("ucx-jars", "the ucx provider and JUCX are on the class path"));
    } else {
      String missing =
          !provider && !jucx
              ? "the ucx provider (memwire-block-transfer-ucx) and JUCX are not on the class path"
              : !provider
                  ? "the ucx provider (memwire-block-transfer-ucx) is not on the class path"
                  : "JUCX (org.openucx:jucx) is not on the class path";
      if (want == ProviderKind.UCX) {
        out.add(
            Check.fail(
                "ucx-jars", missing + "; a node with provider=ucx will refuse to start", advice));
        return out;
      }
      out.add(
          Check.ok(
              "ucx-jars",
              missing
                  + (want == ProviderKind.AUTO
                      ? " (provider=auto will not consider ucx)"
                      : " (not used: provider=" + want + ")")));
      return out;
    }
    String v = env.apply(ERROR_SIGNALS);
    boolean envOk = v != null && v.isBlank();
    if (envOk) {
      out.add(Check.ok("ucx-env", ERROR_SIGNALS + " is set and empty"));
    } else {
      out.add(
          problem(
              "ucx-env",
              ERROR_SIGNALS
                  + (v == null ? " is not set" : "=" + v)
                  + "; UCX would take signals the JVM uses (SIGSEGV for null checks), so Memwire"
                  + " does not load UCX",
              "export "
                  + ERROR_SIGNALS
                  + "= (empty) in the node's environment; Spark: spark.executorEnv."
                  + ERROR_SIGNALS
                  + "= and the same in the driver's environment"));
    }
    Optional<Path> lib = libucpFile.get();
    if (lib.isEmpty()) {
      out.add(
          problem(
              "libucp",
              LIBUCP
                  + " not found (searched java.library.path, LD_LIBRARY_PATH, the system"
                  + " library directories)",
              INSTALL));
    } else if (!envOk) {
      out.add(
          Check.ok(
              "libucp",
              lib.get() + " found; not loaded, since " + ERROR_SIGNALS + " is not set empty"));
    } else {
      Optional<String> err = load.apply(lib.get());
      out.add(
          err.isPresent()
              ? problem("libucp", lib.get() + " does not load: " + err.get(), INSTALL)
              : Check.ok("libucp", lib.get() + " loads"));
    }
    Optional<String> noRdma = whyNoRdma.get();
    out.add(
        noRdma.isEmpty()
            ? Check.ok(
                "ucx-rdma",
                "UCX would use RDMA (an RDMA device, UCX's verbs module, an RDMA transport"
                    + " allowed): provider=auto may pick ucx when verbs cannot run")
            : problem(
                "ucx-rdma",
                "with provider=auto the ucx provider is not used: " + noRdma.get(),
                "provider=auto uses UCX over RDMA only; fix the lines above, or set provider=ucx"
                    + " to use UCX's tcp or shared-memory transports anyway"));
    return out;
  }

  private Check problem(String name, String finding, String advice) {
    switch (config.provider()) {
      case UCX:
        return Check.fail(
            name, finding + "; a node with provider=ucx will refuse to start", advice);
      case AUTO:
        return Check.warn(name, finding + "; provider=auto will not fall back to ucx", advice);
      default:
        return Check.ok(name, finding + " (not used: provider=" + config.provider() + ")");
    }
  }

  private static boolean loadable(String className) {
    try {
      Class.forName(className, false, UcxChecks.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** java.library.path, LD_LIBRARY_PATH, then the usual system library directories. */
  static List<Path> searchPath() {
    Set<String> dirs = new LinkedHashSet<>();
    for (String p :
        new String[] {System.getProperty("java.library.path"), System.getenv("LD_LIBRARY_PATH")}) {
      if (p != null) {
        for (String d : p.split(File.pathSeparator)) {
          if (!d.isEmpty()) {
            dirs.add(d);
          }
        }
      }
    }
    dirs.addAll(
        List.of(
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
            "/opt/ucx/lib"));
    List<Path> out = new ArrayList<>();
    for (String d : dirs) {
      out.add(Path.of(d));
    }
    return out;
  }

  /** The first {@code libucp.so.0} (or {@code libucp.so}) in {@code dirs}. */
  static Optional<Path> findLibucp(List<Path> dirs) {
    for (Path d : dirs) {
      for (String n : new String[] {LIBUCP, "libucp.so"}) {
        Path f = d.resolve(n);
        if (Files.exists(f)) {
          return Optional.of(f);
        }
      }
    }
    return Optional.empty();
  }

  private static Optional<String> loadFile(Path f) {
    try {
      System.load(f.toAbsolutePath().toString());
      return Optional.empty();
    } catch (UnsatisfiedLinkError | SecurityException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** The ucx factory's own answer, asked as provider=auto asks it. */
  private static Optional<String> factoryRule(TransferConfig config) {
    for (ProviderFactory f :
        ServiceLoader.load(ProviderFactory.class, UcxChecks.class.getClassLoader())) {
      if (f.kind() == ProviderKind.UCX) {
        return f.unavailableReason(config.toBuilder().provider(ProviderKind.AUTO).build());
      }
    }
    return Optional.of("the ucx provider is not on the class path");
  }
}
