package io.memwire.tools.doctor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Would the host firewall drop a new incoming flow to a port? Reads the filter rules of the IPv4
 * input path from {@code iptables-save} or {@code nft list ruleset} output and follows them the way
 * the kernel would for the first packet of a flow from an unknown address. Rules that match on
 * things the doctor cannot know (source address, interface other than lo, marks, rate limits) make
 * the answer "depends" when they could change it; connection-state rules that only match
 * established or related traffic do not apply to a new flow.
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

  private enum Match {
    YES,
    NO,
    MAYBE
  }

  private static final class Rule {
    final Match match;
    final String verdict; // accept, drop, jump:X, goto:X, return, or null (no verdict)
    final String text;

    Rule(Match match, String verdict, String text) {
      this.match = match;
      this.verdict = verdict;
      this.text = text;
    }
  }

  private static final class Chain {
    final String name;
    String policy; // accept/drop for base chains, null otherwise
    final List<String> lines = new ArrayList<>();

    Chain(String name) {
      this.name = name;
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

  // ---------------------------------------------------------------- iptables-save

  /** The verdict of the filter table's INPUT chain in {@code iptables-save} output. */
  static Result iptables(String save, Flow flow) {
    Map<String, Chain> chains = new LinkedHashMap<>();
    boolean filter = false;
    for (String raw : save.split("\n")) {
      String line = raw.trim();
      if (line.startsWith("*")) {
        filter = line.equals("*filter");
      } else if (!filter || line.isEmpty() || line.startsWith("#") || line.equals("COMMIT")) {
        continue;
      } else if (line.startsWith(":")) {
        String[] p = line.substring(1).split("\\s+");
        Chain c = chains.computeIfAbsent(p[0], Chain::new);
        c.policy = p.length > 1 && !p[1].equals("-") ? p[1].toLowerCase(Locale.ROOT) : null;
      } else if (line.startsWith("-A ")) {
        String[] p = line.split("\\s+", 3);
        if (p.length == 3) {
          chains.computeIfAbsent(p[1], Chain::new).lines.add(p[2]);
        }
      }
    }
    Chain input = chains.get("INPUT");
    if (input == null) {
      return new Result(Verdict.ACCEPTED, "no filter INPUT chain");
    }
    return walk(input, chains, flow, Firewall::iptablesRule, "iptables INPUT");
  }

  private static Rule iptablesRule(String text, Flow flow) {
    List<String> t = tokens(text);
    Match m = Match.YES;
    String verdict = null;
    String proto;
    boolean negate = false;
    for (int i = 0; i < t.size(); i++) {
      String tok = t.get(i);
      String arg = i + 1 < t.size() ? t.get(i + 1) : "";
      if (tok.equals("!")) {
        negate = true;
        continue;
      }
      boolean neg = negate;
      negate = false;
      switch (tok) {
        case "-p":
        case "--protocol":
          i++;
          proto = arg.toLowerCase(Locale.ROOT);
          boolean same = proto.equals(flow.proto) || proto.equals("all") || proto.equals("0");
          m = and(m, same != neg ? Match.YES : Match.NO);
          break;
        case "-m":
        case "--match":
          i++; // the module's own options follow and are handled one by one
          break;
        case "--dport":
        case "--destination-port":
        case "--dports":
        case "--destination-ports":
          i++;
          m =
              and(
                  m,
                  neg ? not(portIn(arg, flow.port, ",", ":")) : portIn(arg, flow.port, ",", ":"));
          break;
        case "--ctstate":
        case "--state":
          i++;
          boolean fresh = arg.toUpperCase(Locale.ROOT).contains("NEW");
          m = and(m, fresh != neg ? Match.YES : Match.NO);
          break;
        case "-i":
        case "--in-interface":
          i++;
          m = and(m, arg.equals("lo") ? (neg ? Match.YES : Match.NO) : Match.MAYBE);
          break;
        case "--comment":
          i++;
          break;
        case "-j":
        case "--jump":
          verdict = target(arg);
          i = t.size(); // the target's own options follow
          break;
        case "-g":
        case "--goto":
          verdict = "goto:" + arg;
          i = t.size();
          break;
        default:
          // An option we do not evaluate (-s, -d, --sport, limits, marks...): it may or may
          // not match this flow. Its arguments are skipped.
          m = and(m, Match.MAYBE);
          while (i + 1 < t.size() && !t.get(i + 1).startsWith("-") && !t.get(i + 1).equals("!")) {
            i++;
          }
          break;
      }
    }
    return new Rule(m, verdict, text);
  }

  private static String target(String t) {
    switch (t) {
      case "ACCEPT":
        return "accept";
      case "DROP":
      case "REJECT":
        return "drop";
      case "RETURN":
        return "return";
      case "LOG":
      case "NFLOG":
      case "MARK":
      case "CONNMARK":
      case "CT":
        return null; // non-terminating
      default:
        return "jump:" + t;
    }
  }

  // ---------------------------------------------------------------- nftables

  /**
   * The combined verdict of every base chain on the input hook of the {@code ip} and {@code inet}
   * tables in {@code nft list ruleset} output: a packet must pass all of them.
   */
  static Result nft(String ruleset, Flow flow) {
    Map<String, Map<String, Chain>> tables = new LinkedHashMap<>();
    List<String[]> bases = new ArrayList<>(); // {table key, chain name}
    String table = null;
    Chain chain = null;
    int depth = 0;
    for (String raw : ruleset.split("\n")) {
      String line = raw.trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      if (depth == 0 && line.startsWith("table ")) {
        String[] p = line.replace("{", "").trim().split("\\s+");
        String family = p.length > 2 ? p[1] : "ip";
        String name = p.length > 2 ? p[2] : p[1];
        table = family.equals("ip") || family.equals("inet") ? family + " " + name : null;
        if (table != null) {
          tables.put(table, new HashMap<>());
        }
      } else if (depth == 1 && table != null && line.startsWith("chain ")) {
        String name = line.substring(6).replace("{", "").trim();
        chain = new Chain(name);
        tables.get(table).put(name, chain);
      } else if (depth == 2 && chain != null && line.startsWith("type ")) {
        if (line.matches("^type filter\\b.*\\bhook input\\b.*")) {
          bases.add(new String[] {table, chain.name});
        }
        int p = line.indexOf("policy ");
        chain.policy = p < 0 ? "accept" : line.substring(p + 7).replace(";", "").trim();
      } else if (depth == 2 && chain != null && !line.equals("}")) {
        chain.lines.add(line);
      }
      depth += count(line, '{') - count(line, '}');
      if (depth < 2) {
        chain = null;
      }
      if (depth < 1) {
        table = null;
        depth = 0;
      }
    }
    Result combined = new Result(Verdict.ACCEPTED, "no input filter chain");
    for (String[] b : bases) {
      Map<String, Chain> chains = tables.get(b[0]);
      Result r =
          walk(chains.get(b[1]), chains, flow, Firewall::nftRule, "nft " + b[0] + " " + b[1]);
      if (rank(r.verdict) > rank(combined.verdict)
          || (combined.why.startsWith("no input") && r.verdict == Verdict.ACCEPTED)) {
        combined = r;
      }
    }
    return combined;
  }

  private static int rank(Verdict v) {
    return v == Verdict.DROPPED ? 2 : v == Verdict.DEPENDS ? 1 : 0;
  }

  private static int count(String s, char c) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      n += s.charAt(i) == c ? 1 : 0;
    }
    return n;
  }

  private static Rule nftRule(String text, Flow flow) {
    List<String> t = tokens(text);
    Match m = Match.YES;
    String verdict = null;
    for (int i = 0; i < t.size(); i++) {
      String tok = t.get(i);
      String a1 = i + 1 < t.size() ? t.get(i + 1) : "";
      String a2 = i + 2 < t.size() ? t.get(i + 2) : "";
      switch (tok) {
        case "udp":
        case "tcp":
          if (a1.equals("dport")) {
            boolean neg = a2.equals("!=");
            String ports = neg ? (i + 3 < t.size() ? t.get(i + 3) : "") : a2;
            i += neg ? 3 : 2;
            Match pm = tok.equals(flow.proto) ? portIn(ports, flow.port, ",", "-") : Match.NO;
            m = and(m, neg && tok.equals(flow.proto) ? not(pm) : pm);
          } else {
            m = and(m, Match.MAYBE);
            i++;
          }
          break;
        case "th":
          if (a1.equals("dport")) {
            i += 2;
            m = and(m, portIn(a2, flow.port, ",", "-"));
          } else {
            m = and(m, Match.MAYBE);
          }
          break;
        case "meta":
          if (a1.equals("l4proto")) {
            i += 2;
            m = and(m, a2.contains(flow.proto) ? Match.YES : Match.NO);
          } else if (a1.equals("iif") || a1.equals("iifname")) {
            i += 2;
            m = and(m, a2.replace("\"", "").equals("lo") ? Match.NO : Match.MAYBE);
          } else {
            m = and(m, Match.MAYBE);
          }
          break;
        case "ip":
          if (a1.equals("protocol")) {
            i += 2;
            m = and(m, a2.contains(flow.proto) ? Match.YES : Match.NO);
          } else {
            m = and(m, Match.MAYBE);
            i += 2;
          }
          break;
        case "ip6":
          m = Match.NO; // an IPv6-only rule never sees this IPv4 flow
          i += 2;
          break;
        case "ct":
          if (a1.equals("state")) {
            i += 2;
            m = and(m, a2.contains("new") ? Match.YES : Match.NO);
          } else {
            m = and(m, Match.MAYBE);
            i += 2;
          }
          break;
        case "iif":
        case "iifname":
          i++;
          m = and(m, a1.replace("\"", "").equals("lo") ? Match.NO : Match.MAYBE);
          break;
        case "counter":
          while (i + 2 < t.size()
              && (t.get(i + 1).equals("packets") || t.get(i + 1).equals("bytes"))) {
            i += 2;
          }
          break;
        case "log":
        case "comment":
          while (i + 2 < t.size()
              && (t.get(i + 1).equals("prefix")
                  || t.get(i + 1).equals("level")
                  || t.get(i + 1).startsWith("\""))) {
            i += t.get(i + 1).startsWith("\"") ? 1 : 2;
          }
          break;
        case "accept":
          verdict = "accept";
          break;
        case "drop":
          verdict = "drop";
          break;
        case "reject":
          verdict = "drop";
          i = t.size(); // "with icmp type ..." follows
          break;
        case "return":
          verdict = "return";
          break;
        case "jump":
        case "goto":
          verdict = tok + ":" + a1;
          i++;
          break;
        default:
          m = and(m, Match.MAYBE);
          break;
      }
    }
    return new Rule(m, verdict, text);
  }

  // ---------------------------------------------------------------- shared

  private interface RuleParser {
    Rule parse(String text, Flow flow);
  }

  /** Follows a base chain to a verdict. */
  private static Result walk(
      Chain base, Map<String, Chain> chains, Flow flow, RuleParser parser, String where) {
    String[] maybe = new String[2]; // {first rule that may accept, first that may drop}
    Result r = walk(base, chains, flow, parser, where, 0, maybe);
    if (r == null) {
      r = new Result(Verdict.ACCEPTED, where + ": no policy");
    }
    return settle(r, maybe[0], maybe[1]);
  }

  /**
   * Follows one chain; null when it ends (or RETURNs) without a verdict, so the caller goes on.
   * Verdicts of rules that may or may not match are collected in {@code maybe}.
   */
  private static Result walk(
      Chain chain,
      Map<String, Chain> chains,
      Flow flow,
      RuleParser parser,
      String where,
      int depth,
      String[] maybe) {
    if (chain == null || depth > 16) {
      return new Result(Verdict.DEPENDS, where + ": chain missing or nested too deep");
    }
    for (String line : chain.lines) {
      Rule r = parser.parse(line, flow);
      if (r.match == Match.NO || r.verdict == null) {
        continue;
      }
      Result decided;
      if (r.verdict.startsWith("jump:") || r.verdict.startsWith("goto:")) {
        String name = r.verdict.substring(5);
        Chain sub = chains.get(name);
        String subWhere = where.substring(0, where.lastIndexOf(' ') + 1) + name;
        if (sub == null) {
          decided = new Result(Verdict.DEPENDS, subWhere + ": unknown chain");
        } else if (r.match == Match.MAYBE) {
          // Whatever the sub-chain decides, it may not apply: record it as possible only.
          String[] inner = new String[2];
          Result res = walk(sub, chains, flow, parser, subWhere, depth + 1, inner);
          note(maybe, inner[0], inner[1]);
          if (res != null) {
            note(
                maybe,
                res.verdict == Verdict.ACCEPTED ? res.why : null,
                res.verdict == Verdict.ACCEPTED ? null : res.why);
          }
          continue;
        } else {
          Result res = walk(sub, chains, flow, parser, subWhere, depth + 1, maybe);
          if (res == null) {
            if (r.verdict.startsWith("goto:")) {
              break; // the goto'd chain returns to our caller
            }
            continue;
          }
          return res;
        }
      } else if (r.verdict.equals("return")) {
        if (r.match == Match.YES) {
          return null;
        }
        continue;
      } else {
        decided =
            new Result(
                r.verdict.equals("accept") ? Verdict.ACCEPTED : Verdict.DROPPED,
                where + " rule `" + r.text + "`");
      }
      if (r.match == Match.MAYBE || decided.verdict == Verdict.DEPENDS) {
        note(
            maybe,
            decided.verdict == Verdict.ACCEPTED ? decided.why : null,
            decided.verdict == Verdict.ACCEPTED ? null : decided.why);
        continue;
      }
      return decided;
    }
    if (chain.policy == null || depth > 0) {
      return null;
    }
    return new Result(
        chain.policy.equals("drop") ? Verdict.DROPPED : Verdict.ACCEPTED,
        where + " policy " + chain.policy.toUpperCase(Locale.ROOT));
  }

  private static void note(String[] maybe, String accept, String drop) {
    if (maybe[0] == null) {
      maybe[0] = accept;
    }
    if (maybe[1] == null) {
      maybe[1] = drop;
    }
  }

  /** A definite outcome, unless a rule before it that may match would have decided otherwise. */
  private static Result settle(Result decided, String maybeAccept, String maybeDrop) {
    if (decided.verdict == Verdict.DROPPED && maybeAccept != null) {
      return new Result(
          Verdict.DEPENDS,
          "dropped by " + decided.why + " unless " + maybeAccept + " accepts it first");
    }
    if (decided.verdict == Verdict.ACCEPTED && maybeDrop != null) {
      return new Result(
          Verdict.DEPENDS,
          "accepted by " + decided.why + " unless " + maybeDrop + " drops it first");
    }
    return decided;
  }

  private static Match and(Match a, Match b) {
    if (a == Match.NO || b == Match.NO) {
      return Match.NO;
    }
    return a == Match.MAYBE || b == Match.MAYBE ? Match.MAYBE : Match.YES;
  }

  private static Match not(Match a) {
    return a == Match.YES ? Match.NO : a == Match.NO ? Match.YES : Match.MAYBE;
  }

  /** Whether {@code port} is in a list like {@code 22,7000:7100} or {@code {22, 7000-7100}}. */
  private static Match portIn(String spec, int port, String listSep, String rangeSep) {
    if (port < 0) {
      return Match.MAYBE; // the port is chosen at start
    }
    String s = spec.replace("{", "").replace("}", "").trim();
    for (String part : s.split(listSep)) {
      String p = part.trim();
      if (p.isEmpty()) {
        continue;
      }
      try {
        int r = p.indexOf(rangeSep);
        if (r > 0) {
          if (port >= Integer.parseInt(p.substring(0, r).trim())
              && port <= Integer.parseInt(p.substring(r + 1).trim())) {
            return Match.YES;
          }
        } else if (Integer.parseInt(p) == port) {
          return Match.YES;
        }
      } catch (NumberFormatException e) {
        return Match.MAYBE; // a named service or a set variable
      }
    }
    return Match.NO;
  }

  /** Splits on blanks, keeping "quoted strings" and {@code { ... }} sets as one token. */
  static List<String> tokens(String s) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    char close = 0;
    for (char c : s.toCharArray()) {
      if (close != 0) {
        cur.append(c);
        if (c == close) {
          close = 0;
        }
      } else if (c == '"' || c == '{') {
        cur.append(c);
        close = c == '"' ? '"' : '}';
      } else if (Character.isWhitespace(c)) {
        if (cur.length() > 0) {
          out.add(cur.toString());
          cur.setLength(0);
        }
      } else {
        cur.append(c);
      }
    }
    if (cur.length() > 0) {
      out.add(cur.toString());
    }
    return out;
  }
}
