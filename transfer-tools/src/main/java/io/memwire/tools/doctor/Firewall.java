package io.memwire.tools.doctor;

import java.util.ArrayList;
import java.util.List;

/**
 * Would the host firewall drop a new incoming flow to a port? Reads the filter rules of the IPv4
 * input path from {@code iptables-save} or {@code nft list ruleset} output and follows them the way
 * the kernel would for the first packet of a flow from an unknown address. Rules that match on
 * things the doctor cannot know (source address, interface other than lo, marks, rate limits) make
 * the answer "depends" when they could change it; connection-state rules that only match
 * established or related traffic do not apply to a new flow.
 *
 * <p>Reading the rules is {@link IptablesRules} and {@link NftRules}; following chains to a verdict
 * is {@link ChainWalker}.
 */
final class Firewall {
  private Firewall() {}

  /** The outcome for one flow. */
  enum Verdict {
    ACCEPTED,
    DROPPED,
    DEPENDS
  }

  /** A verdict and the rule or policy that decided it. */
  static final class Result {
    final Verdict verdict;
    final String why;

    Result(Verdict verdict, String why) {
      this.verdict = verdict;
      this.why = why;
    }

    @Override
    public String toString() {
      return verdict + " (" + why + ")";
    }
  }

  /** A flow: protocol ("udp"/"tcp") and destination port, or -1 when the port is not known yet. */
  static final class Flow {
    final String proto;
    final int port;

    Flow(String proto, int port) {
      this.proto = proto;
      this.port = port;
    }
  }

  /** One tool's rules, or why they could not be read. */
  static final class Ruleset {
    final String source;
    final String text;
    final String error;

    private Ruleset(String source, String text, String error) {
      this.source = source;
      this.text = text;
      this.error = error;
    }

    static Ruleset of(String source, String text) {
      return new Ruleset(source, text, null);
    }

    static Ruleset unreadable(String source, String error) {
      return new Ruleset(source, null, error);
    }

    /** iptables-save output (rather than nft's). */
    boolean isIptables() {
      return text != null
          && !text.contains("table ")
          && (text.contains("*filter")
              || text.contains(":INPUT")
              || (text.trim().isEmpty() && source.startsWith("iptables")));
    }

    Result verdict(Flow flow) {
      return isIptables() ? iptables(text, flow) : nft(text, flow);
    }
  }

  /** Runs {@code iptables-save} and {@code nft list ruleset} (both need CAP_NET_ADMIN). */
  static List<Ruleset> readSystem() {
    List<Ruleset> out = new ArrayList<>();
    out.add(run("iptables-save", List.of()));
    out.add(run("nft", List.of("list", "ruleset")));
    return out;
  }

  private static Ruleset run(String tool, List<String> args) {
    String name = tool + (args.isEmpty() ? "" : " " + String.join(" ", args));
    String exe = null;
    for (String dir : new String[] {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
      if (java.nio.file.Files.isExecutable(java.nio.file.Path.of(dir, tool))) {
        exe = dir + "/" + tool;
        break;
      }
    }
    if (exe == null) {
      return Ruleset.unreadable(name, "not installed");
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(exe);
    cmd.addAll(args);
    try {
      java.nio.file.Path err = java.nio.file.Files.createTempFile("memwire-doctor", ".err");
      try {
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        byte[] stdout;
        try (java.io.InputStream in = p.getInputStream()) {
          stdout = in.readNBytes(4 << 20);
        }
        if (!p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
          p.destroyForcibly();
          return Ruleset.unreadable(name, "did not finish within 10 s");
        }
        if (p.exitValue() != 0) {
          String e = java.nio.file.Files.readString(err).trim();
          return Ruleset.unreadable(
              name, "exit " + p.exitValue() + (e.isEmpty() ? "" : ": " + e.split("\n")[0]));
        }
        return Ruleset.of(name, new String(stdout, java.nio.charset.StandardCharsets.UTF_8));
      } finally {
        java.nio.file.Files.deleteIfExists(err);
      }
    } catch (java.io.IOException e) {
      return Ruleset.unreadable(name, e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Ruleset.unreadable(name, "interrupted");
    }
  }

  /** The verdict of the filter table's INPUT chain in {@code iptables-save} output. */
  static Result iptables(String save, Flow flow) {
    return IptablesRules.verdict(save, flow);
  }

  /**
   * The combined verdict of every base chain on the input hook of the {@code ip} and {@code inet}
   * tables in {@code nft list ruleset} output: a packet must pass all of them.
   */
  static Result nft(String ruleset, Flow flow) {
    return NftRules.verdict(ruleset, flow);
  }
}
