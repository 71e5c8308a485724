package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.verbs.DisniLibrary;
import io.memwire.transfer.verbs.MemlockLimit;
import io.memwire.transfer.verbs.RdmaInventory;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code memwire doctor}: checks a node before a job and prints one line per check, OK / WARN /
 * FAIL with what to do. Exit code 0 when nothing failed, 1 on any FAIL, 2 on bad arguments.
 *
 * <pre>
 * java -cp memwire-transfer-tools.jar:memwire-block-transfer.jar:disni.jar:slf4j-api.jar \
 *     io.memwire.tools.doctor.Doctor [options]
 *   --provider auto|verbs|ucx|tcp  --bind IP  --device NAME  --port N  --budget SIZE  --set KEY=VALUE
 *   --sysfs DIR (default /sys)  --limits FILE (default /proc/self/limits)
 *   --firewall FILE   saved iptables-save or nft list ruleset output (default: run them)
 *   --serve [--serve-size BYTES] [--serve-seconds N]   start a node with a test region
 *   --peer HOST:PORT [--region DESCRIPTOR]             connect to it and read the region
 *   --peer-mtu N      the peer's RDMA MTU (printed by --serve there): compared with this node's
 * </pre>
 *
 * Configuration also comes from system properties {@code memwire.transfer.<key>}.
 */
public final class Doctor {
  private Doctor() {}

  static final String USAGE =
      "usage: memwire doctor [--provider auto|verbs|ucx|tcp] [--bind IP]"
          + " [--device NAME] [--port N] [--budget SIZE] [--set KEY=VALUE]... [--sysfs DIR]"
          + " [--limits FILE] [--firewall FILE] [--peer HOST:PORT [--region DESCRIPTOR]"
          + " [--peer-mtu N]]"
          + " | --serve [--serve-size BYTES] [--serve-seconds N]";

  public static void main(String[] args) {
    System.exit(run(args, System.out));
  }

  /** Runs the doctor; returns the exit code. */
  public static int run(String[] args, PrintStream out) {
    Map<String, String> props = new HashMap<>();
    for (String k : System.getProperties().stringPropertyNames()) {
      props.put(k, System.getProperty(k));
    }
    TransferConfigBuilder b;
    Path sysfs = RdmaInventory.SYSFS;
    Path limits = MemlockLimit.PROC_SELF_LIMITS;
    String peer = null;
    Integer peerMtu = null;
    String region = null;
    String firewall = null;
    boolean serve = false;
    int serveSize = 1 << 20;
    long serveSeconds = 600;
    try {
      b = TransferConfig.fromProperties(props, "memwire.transfer.").toBuilder();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "--help":
          case "-h":
            out.println(USAGE);
            return 0;
          case "--serve":
            serve = true;
            continue;
          default:
            break;
        }
        if (i + 1 >= args.length) {
          out.println(a + " needs a value; " + USAGE);
          return 2;
        }
        String v = args[++i];
        switch (a) {
          case "--provider":
            b.provider(ProviderKind.parse("--provider", v));
            break;
          case "--bind":
            b.bindAddress(v);
            break;
          case "--device":
            b.device(v);
            break;
          case "--port":
            b.set(TransferConfig.PORT, v);
            break;
          case "--budget":
            {
              // The pool must fit in the budget: shrink it with a small budget.
              long budget =
                  TransferConfig.builder()
                      .set(TransferConfig.REGISTRATION_BUDGET, v)
                      .poolMaxBytes(1 << 20)
                      .build()
                      .registrationBudget();
              b.registrationBudget(budget).poolMaxBytes(Math.min(budget, 256L << 20));
              break;
            }
          case "--set":
            {
              int eq = v.indexOf('=');
              if (eq <= 0) {
                out.println("--set needs KEY=VALUE, got " + v);
                return 2;
              }
              b.set(v.substring(0, eq), v.substring(eq + 1));
              break;
            }
          case "--sysfs":
            sysfs = Path.of(v);
            break;
          case "--limits":
            limits = Path.of(v);
            break;
          case "--peer":
            peer = v;
            break;
          case "--region":
            region = v;
            break;
          case "--peer-mtu":
            peerMtu = Integer.parseInt(v);
            break;
          case "--firewall":
            firewall = v;
            break;
          case "--serve-size":
            serveSize = Integer.parseInt(v);
            break;
          case "--serve-seconds":
            serveSeconds = Long.parseLong(v);
            break;
          default:
            out.println("unknown option " + a + "; " + USAGE);
            return 2;
        }
      }
    } catch (IllegalArgumentException e) { // TransferConfigException, NumberFormatException
      out.println("bad argument: " + e.getMessage());
      return 2;
    }
    TransferConfig config;
    try {
      config = b.build();
    } catch (TransferConfigException e) {
      out.println("bad configuration: " + e.getMessage());
      return 2;
    }
    if (serve) {
      try {
        PeerChecks.serve(config, serveSize, Duration.ofSeconds(serveSeconds), out);
        return 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 0;
      } catch (RuntimeException e) {
        out.println(
            Check.fail(
                    "serve",
                    "cannot start a node: " + e.getMessage(),
                    "fix the configuration (run the doctor without --serve)")
                .line());
        return 1;
      }
    }
    InetSocketAddress peerAddress = null;
    RemoteRegion remote = null;
    try {
      if (peer != null) {
        int colon = peer.lastIndexOf(':');
        if (colon <= 0) {
          throw new IllegalArgumentException("--peer needs HOST:PORT, got " + peer);
        }
        peerAddress =
            new InetSocketAddress(
                peer.substring(0, colon), Integer.parseInt(peer.substring(colon + 1)));
        if (peerAddress.isUnresolved()) {
          throw new IllegalArgumentException(
              "--peer host " + peer.substring(0, colon) + " does not resolve");
        }
      }
      if (peerMtu != null && peer == null) {
        throw new IllegalArgumentException("--peer-mtu needs --peer");
      }
      if (region != null) {
        if (peer == null) {
          throw new IllegalArgumentException("--region needs --peer");
        }
        remote = PeerChecks.decode(region);
      }
    } catch (IllegalArgumentException e) {
      out.println("bad argument: " + e.getMessage());
      return 2;
    }
    boolean real =
        sysfs.equals(RdmaInventory.SYSFS) && limits.equals(MemlockLimit.PROC_SELF_LIMITS);
    RdmaInventory inventory =
        real ? RdmaInventory.system() : new RdmaInventory(sysfs, n -> List.of());
    out.println("memwire doctor: " + config + " (sysfs " + sysfs + ", limits " + limits + ")");
    String firewallFile = firewall;
    java.util.function.Supplier<List<Firewall.Ruleset>> rules =
        firewallFile == null
            ? Firewall::readSystem
            : () -> List.of(readRules(Path.of(firewallFile)));
    List<Check> checks =
        new ArrayList<>(
            new SystemChecks(
                    config,
                    inventory,
                    limits,
                    DisniLibrary::loadError,
                    DisniLibrary::version,
                    real,
                    Doctor::libdisniFile,
                    rules)
                .run());
    if (peerAddress != null) {
      if (peerMtu != null) {
        checks.add(
            checks.size() - 1,
            PeerChecks.mtu(inventory, peerBindAddress(config, peerAddress), peerMtu));
      }
      checks.add(
          checks.size() - 1,
          PeerChecks.peer(
              config,
              peerAddress,
              remote,
              peerMtu == null ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(peerMtu)));
    }
    int fails = 0;
    int warns = 0;
    for (Check c : checks) {
      out.println(c.line());
      if (c.status() == Check.Status.FAIL) {
        fails++;
      } else if (c.status() == Check.Status.WARN) {
        warns++;
      }
    }
    out.println(
        fails > 0
            ? fails + " check(s) FAILED, " + warns + " warning(s)"
            : warns > 0 ? "no failures, " + warns + " warning(s)" : "all checks OK");
    out.flush();
    return fails > 0 ? 1 : 0;
  }

  /**
   * The local address the peer check connects from: the bind address, else the one the kernel
   * routes to the peer through.
   */
  private static java.net.InetAddress peerBindAddress(
      TransferConfig config, InetSocketAddress peer) {
    if (config.bindAddress() != null && !config.bindAddress().isEmpty()) {
      try {
        return java.net.InetAddress.getByName(config.bindAddress());
      } catch (java.io.IOException e) {
        // fall through to the routed address
      }
    }
    try (java.net.DatagramSocket s = new java.net.DatagramSocket()) {
      s.connect(peer);
      return s.getLocalAddress();
    } catch (java.io.IOException e) {
      return java.net.InetAddress.getLoopbackAddress();
    }
  }

  /** The loaded libdisni's file, else the one java.library.path would load. */
  private static java.util.Optional<Path> libdisniFile() {
    java.util.Optional<Path> loaded =
        NativeLibrary.loadedFrom(NativeLibrary.PROC_SELF_MAPS, NativeLibrary.FILE_NAME);
    return loaded.isPresent()
        ? loaded
        : NativeLibrary.onLibraryPath(
            System.getProperty("java.library.path"), NativeLibrary.FILE_NAME);
  }

  private static Firewall.Ruleset readRules(Path file) {
    try {
      return Firewall.Ruleset.of(file.toString(), java.nio.file.Files.readString(file));
    } catch (java.io.IOException e) {
      return Firewall.Ruleset.unreadable(file.toString(), e.toString());
    }
  }
}
