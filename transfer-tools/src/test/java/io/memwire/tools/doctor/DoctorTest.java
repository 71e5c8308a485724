package io.memwire.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.verbs.FakeSysfs;
import io.memwire.transfer.verbs.RdmaInventory;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The doctor's checks on fake sysfs trees, its exit codes, and the two-node check on tcp. */
class DoctorTest {
  @TempDir Path tmp;

  private static final class Run {
    final int code;
    final String out;

    Run(int code, String out) {
      this.code = code;
      this.out = out;
    }

    String line(String check) {
      for (String l : out.split("\n")) {
        if (l.length() > 5 && l.substring(5).startsWith(check + " ")) {
          return l;
        }
      }
      fail("no line for check " + check + " in:\n" + out);
      return null;
    }
  }

  private static Run doctor(String... args) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream ps = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    int code = Doctor.run(args, ps);
    return new Run(code, bytes.toString(StandardCharsets.UTF_8));
  }

  private static List<Check> checks(
      TransferConfig c, FakeSysfs fs, Path limits, Optional<String> lib) {
    return new SystemChecks(
            c,
            new RdmaInventory(fs.root(), n -> List.of()),
            limits,
            () -> lib,
            () -> lib.isPresent() ? OptionalInt.empty() : OptionalInt.of(32),
            false)
        .run();
  }

  private static Check byName(List<Check> cs, String name) {
    return cs.stream()
        .filter(c -> c.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " in " + cs));
  }

  private static TransferConfigBuilder cfg() {
    return TransferConfig.builder().registrationBudget(64 << 20).poolMaxBytes(16 << 20);
  }

  @Test
  void activeRocePortWithEverythingInPlaceIsAllOkAndPicksVerbs() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 9000);
    List<Check> cs =
        checks(
            cfg().bindAddress("198.18.0.1").build(),
            fs,
            fs.limits("unlimited", "unlimited"),
            Optional.empty());
    String all = cs.stream().map(Check::line).collect(Collectors.joining("\n"));
    assertTrue(cs.stream().allMatch(c -> c.status() == Check.Status.OK), all);
    assertTrue(
        byName(cs, "port rxe0/1")
            .finding()
            .contains(
                "4: ACTIVE, 5: LinkUp, Ethernet (RoCE), "
                    + "active MTU 4096 (from dummy0 MTU 9000)"),
        all);
    assertTrue(
        byName(cs, "bind-address")
            .finding()
            .contains("198.18.0.1 is served by rxe0 port 1 (RoCE v2 GID 1)"),
        all);
    assertTrue(byName(cs, "roce-gid").finding().startsWith("RoCE v2 GID index 1"), all);
    assertTrue(byName(cs, "libdisni").finding().contains("JNI interface version 32"), all);
    assertTrue(byName(cs, "provider").finding().startsWith("provider=auto will use verbs"), all);
  }

  @Test
  void smallMtuIsAWarningWithTheFix() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    Check port =
        byName(
            checks(
                cfg().bindAddress("198.18.0.1").build(),
                fs,
                fs.limits("unlimited", "unlimited"),
                Optional.empty()),
            "port rxe0/1");
    assertEquals(Check.Status.WARN, port.status());
    assertTrue(
        port.finding().contains("active MTU 1024") && port.advice().contains("MTU to 9000"),
        port.line());
  }

  @Test
  void downPortWarnsAndFailsWhenVerbsIsRequiredOnIt() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("mlx5_0", 1, false, "10.0.0.5", "ens1", 9000);
    Path limits = fs.limits("unlimited", "unlimited");
    List<Check> auto = checks(cfg().bindAddress("10.0.0.5").build(), fs, limits, Optional.empty());
    assertEquals(Check.Status.WARN, byName(auto, "port mlx5_0/1").status());
    assertTrue(byName(auto, "port mlx5_0/1").advice().contains("ip link set ens1 up"));
    assertEquals(Check.Status.WARN, byName(auto, "bind-address").status());
    assertTrue(byName(auto, "provider").finding().contains("will use tcp"));
    List<Check> verbs =
        checks(
            cfg().provider(ProviderKind.VERBS).bindAddress("10.0.0.5").build(),
            fs,
            limits,
            Optional.empty());
    assertEquals(Check.Status.FAIL, byName(verbs, "bind-address").status());
    assertEquals(Check.Status.FAIL, byName(verbs, "provider").status());

    // The same through the command line: exit codes 0 (auto) and 1 (verbs).
    Run a =
        doctor(
            "--sysfs",
            fs.root().toString(),
            "--limits",
            limits.toString(),
            "--bind",
            "10.0.0.5",
            "--budget",
            "64m");
    assertEquals(0, a.code, a.out);
    assertTrue(a.line("port mlx5_0/1").startsWith("WARN"), a.out);
    Run v =
        doctor(
            "--sysfs",
            fs.root().toString(),
            "--limits",
            limits.toString(),
            "--bind",
            "10.0.0.5",
            "--budget",
            "64m",
            "--provider",
            "verbs");
    assertEquals(1, v.code, v.out);
    assertTrue(v.line("provider").startsWith("FAIL"), v.out);
  }

  @Test
  void noDeviceSaysSoAndThatTcpWillBeUsed() {
    FakeSysfs fs = new FakeSysfs(tmp);
    Path limits = fs.limits("65536", "65536");
    Run r = doctor("--sysfs", fs.root().toString(), "--limits", limits.toString());
    assertEquals(0, r.code, r.out);
    String dev = r.line("rdma-devices");
    assertTrue(
        dev.startsWith("WARN")
            && dev.contains("no RDMA device exists on this machine")
            && dev.contains("provider=auto will fall back to tcp"),
        r.out);
    assertTrue(
        r.line("provider")
            .contains(
                "provider=auto will use tcp (auto: verbs not used "
                    + "because no RDMA device found"),
        r.out);
    assertTrue(r.line("memlock").contains("65536 bytes"), r.out);

    Run v =
        doctor(
            "--sysfs", fs.root().toString(), "--limits", limits.toString(), "--provider", "verbs");
    assertEquals(1, v.code, v.out);
    assertTrue(v.line("rdma-devices").startsWith("FAIL"), v.out);

    Run t =
        doctor("--sysfs", fs.root().toString(), "--limits", limits.toString(), "--provider", "tcp");
    assertEquals(0, t.code, t.out);
    assertTrue(
        t.line("provider").startsWith("OK") && t.line("provider").contains("use tcp"), t.out);
  }

  /**
   * Each problem line tells what the configured provider will do about it: auto falls back to tcp,
   * verbs refuses to start (never "tcp will be used"), tcp does not need verbs at all.
   */
  @Test
  void everyProblemLineSaysWhatTheConfiguredProviderDoes() {
    FakeSysfs none = new FakeSysfs(tmp.resolve("none"));
    FakeSysfs rxe =
        new FakeSysfs(tmp.resolve("rxe")).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    for (ProviderKind p : ProviderKind.values()) {
      // No device, no libdisni, memlock below the budget: every check has something to say.
      List<Check> bare =
          checks(
              cfg().provider(p).build(),
              none,
              none.limits("65536", "65536"),
              Optional.of("libdisni is not loadable (x)"));
      // A device whose MTU is small: verbs runs, just not at its best.
      List<Check> small =
          checks(
              cfg().provider(p).bindAddress("198.18.0.1").build(),
              rxe,
              rxe.limits("unlimited", "unlimited"),
              Optional.empty());
      String all =
          p
              + ":\n"
              + bare.stream().map(Check::line).collect(Collectors.joining("\n"))
              + "\n"
              + small.stream().map(Check::line).collect(Collectors.joining("\n"));
      for (String name : List.of("rdma-devices", "libdisni", "memlock")) {
        Check c = byName(bare, name);
        String f = c.finding();
        switch (p) {
          case VERBS:
            assertEquals(Check.Status.FAIL, c.status(), all);
            assertTrue(f.endsWith("a node with provider=verbs will refuse to start"), all);
            assertTrue(!f.contains("tcp"), "a verbs node never falls back to tcp: " + c.line());
            break;
          case AUTO:
            assertEquals(Check.Status.WARN, c.status(), all);
            assertTrue(
                f.endsWith("provider=auto will fall back to tcp") && !f.contains("refuse"), all);
            break;
          default:
            assertEquals(Check.Status.OK, c.status(), all);
            assertTrue(
                f.endsWith("(not needed: provider=" + p + ")")
                    && !f.contains("refuse")
                    && !f.contains("fall back"),
                all);
        }
      }
      Check provider = byName(bare, "provider");
      Check port = byName(small, "port rxe0/1");
      switch (p) {
        case VERBS:
          assertEquals(Check.Status.FAIL, provider.status(), all);
          assertTrue(
              provider
                  .finding()
                  .startsWith("provider=verbs was requested but verbs cannot " + "be used"),
              all);
          assertEquals(Check.Status.WARN, port.status(), all);
          assertTrue(
              byName(small, "provider").finding().startsWith("provider=verbs will use verbs"), all);
          break;
        case AUTO:
          assertEquals(Check.Status.WARN, provider.status(), all);
          assertTrue(provider.finding().startsWith("provider=auto will use tcp"), all);
          assertEquals(Check.Status.WARN, port.status(), all);
          break;
        case UCX:
          // No ucx jars on this class path: the node would refuse to start.
          assertEquals(Check.Status.FAIL, provider.status(), all);
          assertTrue(
              provider.finding().startsWith("provider=ucx was requested but ucx cannot be used"),
              all);
          assertEquals(Check.Status.FAIL, byName(bare, "ucx-jars").status(), all);
          assertEquals(Check.Status.OK, port.status(), all);
          assertTrue(port.finding().endsWith("(not used: provider=ucx)"), all);
          break;
        default:
          assertEquals(Check.Status.OK, provider.status(), all);
          assertTrue(provider.finding().startsWith("provider=tcp will use tcp"), all);
          assertEquals(Check.Status.OK, port.status(), all);
          assertTrue(port.finding().endsWith("(not used: provider=tcp)"), all);
      }
    }
  }

  @Test
  void memlockBelowBudgetAndMissingLibdisniAreNamed() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 9000);
    List<Check> cs =
        checks(
            cfg().provider(ProviderKind.VERBS).bindAddress("198.18.0.1").build(),
            fs,
            fs.limits("8388608", "unlimited"),
            Optional.of("libdisni is not loadable (x)"));
    Check mem = byName(cs, "memlock");
    assertEquals(Check.Status.FAIL, mem.status());
    assertTrue(
        mem.finding().contains("8388608 bytes")
            && mem.finding().contains("registrationBudget=" + (64 << 20))
            && mem.advice().contains("LimitMEMLOCK"),
        mem.line());
    Check lib = byName(cs, "libdisni");
    assertEquals(Check.Status.FAIL, lib.status());
    assertTrue(lib.advice().contains("java.library.path"), lib.line());
  }

  @Test
  void badArgumentsExitWithTwo() {
    assertEquals(2, doctor("--provider", "rdma").code);
    assertEquals(2, doctor("--peer").code);
    assertEquals(2, doctor("--peer", "nohostport").code);
    assertEquals(2, doctor("--bogus", "x").code);
    assertEquals(2, doctor("--peer", "127.0.0.1:1", "--region", "not-a-descriptor").code);
    assertEquals(0, doctor("--help").code);
  }

  @Test
  void twoNodeCheckConnectsAndReadsTheServedTestRegionOverTcp() throws Exception {
    SyncOut served = new SyncOut();
    Thread server =
        new Thread(
            () ->
                Doctor.run(
                    new String[] {
                      "--serve",
                      "--provider",
                      "tcp",
                      "--serve-size",
                      "300000",
                      "--serve-seconds",
                      "120"
                    },
                    served.stream),
            "doctor-serve");
    server.start();
    try {
      String text = served.await("on the other node run:", 30);
      Matcher m = Pattern.compile("--peer (\\S+) --region (\\S+)").matcher(text);
      assertTrue(m.find(), text);
      Run ok = doctor("--provider", "tcp", "--peer", m.group(1), "--region", m.group(2));
      assertEquals(0, ok.code, ok.out);
      String peer = ok.line("peer");
      assertTrue(
          peer.startsWith("OK")
              && peer.contains("300000-byte test region")
              && peer.contains("every byte correct"),
          ok.out);

      Run connectOnly = doctor("--provider", "tcp", "--peer", m.group(1));
      assertEquals(0, connectOnly.code, connectOnly.out);
      assertTrue(connectOnly.line("peer").startsWith("WARN"), connectOnly.out);
    } finally {
      server.interrupt();
      server.join(TimeUnit.SECONDS.toMillis(30));
    }
    assertTrue(!server.isAlive(), "serve mode stops when interrupted");
  }

  @Test
  void twoNodeCheckFailsOnAClosedRegionAndOnANodeThatIsNotThere() throws Exception {
    TransferConfig c = TransferConfig.builder().provider(ProviderKind.TCP).build();
    String descriptor;
    String address;
    try (TransferNode node = TransferNode.start(c)) {
      MemoryRegion r = TestRegions.register(node, PeerChecks.patternBuffer(4096));
      descriptor = PeerChecks.encode(r.remote());
      address = "127.0.0.1:" + node.localAddress().getPort();
      r.close();
      Run closed = doctor("--provider", "tcp", "--peer", address, "--region", descriptor);
      assertEquals(1, closed.code, closed.out);
      assertTrue(
          closed.line("peer").startsWith("FAIL")
              && closed.line("peer").contains("one-sided read of 4096 bytes failed"),
          closed.out);
    }
    Run gone = doctor("--provider", "tcp", "--set", "connectTimeout=2s", "--peer", address);
    assertEquals(1, gone.code, gone.out);
    assertTrue(
        gone.line("peer").startsWith("FAIL") && gone.line("peer").contains("cannot connect"),
        gone.out);
  }

  @Test
  void theTestPatternCatchesMisplacedBytes() {
    assertTrue(PeerChecks.pattern(0) != PeerChecks.pattern(256));
    assertTrue(PeerChecks.pattern(1) != PeerChecks.pattern(2));
    assertEquals(InetAddress.getLoopbackAddress().getHostAddress(), "127.0.0.1");
  }

  /** Collects the serve thread's output and waits, with a deadline, for a line to appear. */
  private static final class SyncOut {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    final PrintStream stream =
        new PrintStream(
            new java.io.OutputStream() {
              @Override
              public void write(int b) {
                synchronized (bytes) {
                  bytes.write(b);
                  bytes.notifyAll();
                }
              }
            },
            true,
            StandardCharsets.UTF_8);

    String await(String marker, long seconds) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      synchronized (bytes) {
        while (true) {
          String s = bytes.toString(StandardCharsets.UTF_8);
          if (s.contains(marker) && s.substring(s.indexOf(marker)).contains("\n")) {
            return s;
          }
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            fail("no '" + marker + "' within " + seconds + " s; output so far:\n" + s);
          }
          bytes.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
      }
    }
  }

  private static List<Check> checks(
      TransferConfig c, FakeSysfs fs, Optional<Path> libFile, List<Firewall.Ruleset> rules) {
    return new SystemChecks(
            c,
            new RdmaInventory(fs.root(), n -> List.of()),
            fs.limits("unlimited", "unlimited"),
            Optional::empty,
            () -> OptionalInt.of(32),
            false,
            () -> libFile,
            () -> rules)
        .run();
  }

  /** A file shaped like a shared library's string table: NUL-terminated names. */
  private Path fakeLibrary(String name, java.util.Collection<String> symbols) throws Exception {
    StringBuilder b = new StringBuilder("\u007fELF\0libibverbs.so.1\0");
    for (String s : symbols) {
      b.append(s).append('\0');
    }
    Path f = tmp.resolve(name);
    java.nio.file.Files.write(f, b.toString().getBytes(StandardCharsets.ISO_8859_1));
    return f;
  }

  @Test
  void libdisniIsCheckedForEveryJniFunctionDisniCalls() throws Exception {
    java.util.Set<String> expected =
        NativeLibrary.expectedSymbols(NativeLibrary.dispatcher().orElseThrow());
    // Names as libdisni's source defines them (JNI mangling of "_getVersion", "_regMr").
    assertTrue(expected.contains("Java_com_ibm_disni_verbs_impl_NativeDispatcher__1getVersion"));
    assertTrue(expected.contains("Java_com_ibm_disni_verbs_impl_NativeDispatcher__1regMr"));
    assertEquals(48, expected.size(), "DiSNI 2.1's NativeDispatcher has 48 native methods");
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 9000);
    TransferConfig auto = cfg().bindAddress("198.18.0.1").build();
    List<String> all = new java.util.ArrayList<>(expected);
    all.add("Java_com_ibm_disni_util_NativeAffinity__1getAffinity");
    Path good = fakeLibrary("libdisni.so", all);
    Check ok = byName(checks(auto, fs, Optional.of(good), List.of()), "libdisni");
    assertEquals(Check.Status.OK, ok.status(), ok.line());
    assertTrue(
        ok.finding().contains("libdisni loaded (" + good + "), JNI interface version 32")
            && ok.finding().contains("all 48 JNI functions of DiSNI 2.1 present"),
        ok.line());

    List<String> old = new java.util.ArrayList<>(expected);
    old.remove("Java_com_ibm_disni_verbs_impl_NativeDispatcher__1regMr");
    Path stale = fakeLibrary("libdisni-old.so", old);
    Check warn = byName(checks(auto, fs, Optional.of(stale), List.of()), "libdisni");
    assertEquals(Check.Status.WARN, warn.status(), warn.line());
    assertTrue(
        warn.finding()
            .contains("lacks 1 of the 48 JNI functions DiSNI 2.1 calls (e.g. " + "1regMr)"),
        warn.line());
    Check fail =
        byName(
            checks(
                cfg().provider(ProviderKind.VERBS).bindAddress("198.18.0.1").build(),
                fs,
                Optional.of(stale),
                List.of()),
            "libdisni");
    assertEquals(Check.Status.FAIL, fail.status(), fail.line());

    assertEquals(
        Optional.of(Path.of("/opt/rdma/lib/libdisni.so")),
        NativeLibrary.loadedFrom(fakeMaps(), "libdisni.so"));
    assertEquals(Optional.empty(), NativeLibrary.loadedFrom(fakeMaps(), "libnothere.so"));
    assertEquals(
        Optional.of(good),
        NativeLibrary.onLibraryPath(
            "/nonexistent" + java.io.File.pathSeparator + tmp, "libdisni.so"));
  }

  private Path fakeMaps() throws Exception {
    Path f = tmp.resolve("maps");
    java.nio.file.Files.writeString(
        f,
        String.join(
            "\n",
            "7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 ",
            "7f0a1d200000-7f0a1d205000 r--p 00000000 fe:00 1311 /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0",
            "7f0a1d400000-7f0a1d40a000 r-xp 00004000 fe:00 5120 /opt/rdma/lib/libdisni.so",
            "7ffd5a3f2000-7ffd5a413000 rw-p 00000000 00:00 0 [stack]",
            ""));
    return f;
  }

  @Test
  void firewallRulesThatDropRoceOrTheNodePortAreWarnings() throws Exception {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 9000);
    TransferConfig auto = cfg().bindAddress("198.18.0.1").set(TransferConfig.PORT, "7337").build();
    List<Check> cs =
        checks(
            auto,
            fs,
            Optional.empty(),
            List.of(
                Firewall.Ruleset.of("iptables-save", FirewallTest.IPTABLES_SSH_ONLY),
                Firewall.Ruleset.unreadable("nft list ruleset", "not installed")));
    Check roce = byName(cs, "firewall-roce");
    assertEquals(Check.Status.WARN, roce.status(), roce.line());
    assertTrue(
        roce.finding()
            .startsWith(
                "UDP 4791 (RoCE v2, also its RDMA CM messages) would be "
                    + "dropped: iptables INPUT policy DROP (iptables-save)"),
        roce.line());
    assertTrue(
        roce.advice().contains("iptables -I INPUT -p udp --dport 4791 -j ACCEPT"), roce.line());
    Check port = byName(cs, "firewall-port");
    assertEquals(Check.Status.WARN, port.status(), port.line());
    assertTrue(port.finding().startsWith("TCP 7337 (node port"), port.line());

    // provider=tcp: RoCE's port is not used, the node port still is.
    List<Check> tcp =
        checks(
            cfg().provider(ProviderKind.TCP).set(TransferConfig.PORT, "7337").build(),
            fs,
            Optional.empty(),
            List.of(Firewall.Ruleset.of("iptables-save", FirewallTest.IPTABLES_SSH_ONLY)));
    assertEquals(Check.Status.OK, byName(tcp, "firewall-roce").status());
    assertEquals(Check.Status.WARN, byName(tcp, "firewall-port").status());

    // Rules not readable (no root): it says so and how to check.
    Check unknown =
        byName(
            checks(
                auto,
                fs,
                Optional.empty(),
                List.of(
                    Firewall.Ruleset.unreadable(
                        "iptables-save",
                        "exit 1: iptables-save v1.8.9 (nf_tables): "
                            + "Could not fetch rule set generation id: Permission denied (you must be root)"),
                    Firewall.Ruleset.unreadable(
                        "nft list ruleset", "exit 1: Operation not permitted"))),
            "firewall-roce");
    assertEquals(Check.Status.WARN, unknown.status(), unknown.line());
    assertTrue(
        unknown.finding().startsWith("cannot tell whether the host firewall drops UDP 4791")
            && unknown.finding().contains("Permission denied (you must be root)")
            && unknown.advice().startsWith("run the doctor as root"),
        unknown.line());
    Check noTools =
        byName(
            checks(
                auto,
                fs,
                Optional.empty(),
                List.of(
                    Firewall.Ruleset.unreadable("iptables-save", "not installed"),
                    Firewall.Ruleset.unreadable("nft list ruleset", "not installed"))),
            "firewall-port");
    assertTrue(noTools.advice().startsWith("neither tool is installed here"), noTools.line());
  }

  @Test
  void firewallFileOnTheCommandLine() throws Exception {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 9000);
    Path rules = tmp.resolve("ruleset.nft");
    java.nio.file.Files.writeString(
        rules,
        FirewallTest.NFT_DROP.replace("\t\tmeta l4proto icmp accept", "\t\tudp dport 4791 accept"));
    Run r =
        doctor(
            "--sysfs",
            fs.root().toString(),
            "--limits",
            fs.limits("unlimited", "unlimited").toString(),
            "--bind",
            "198.18.0.1",
            "--budget",
            "64m",
            "--firewall",
            rules.toString());
    assertTrue(
        r.line("firewall-roce")
            .startsWith(
                "OK   firewall-roce UDP 4791 (RoCE v2, also "
                    + "its RDMA CM messages) is accepted per "
                    + rules),
        r.out);
    assertTrue(r.line("firewall-port").startsWith("WARN"), r.out);
    Run bad = doctor("--sysfs", fs.root().toString(), "--firewall", tmp.resolve("none").toString());
    assertTrue(bad.line("firewall-roce").contains("cannot tell"), bad.out);
  }
}
