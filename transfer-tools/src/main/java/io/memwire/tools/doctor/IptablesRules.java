package io.memwire.tools.doctor;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The iptables side of {@link Firewall}: reads the filter table of {@code iptables-save} output
 * into chains, and each {@code -A} rule into what it means for one flow.
 */
final class IptablesRules {
  private IptablesRules() {}

  /** The verdict of the filter table's INPUT chain in {@code iptables-save} output. */
  static Firewall.Result verdict(String save, Firewall.Flow flow) {
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
      return new Firewall.Result(Firewall.Verdict.ACCEPTED, "no filter INPUT chain");
    }
    return ChainWalker.walk(input, chains, flow, IptablesRules::rule, "iptables INPUT");
  }

  /** One {@code -A} line's match and target for {@code flow}. */
  private static Rule rule(String text, Firewall.Flow flow) {
    List<String> t = Rule.tokens(text);
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
          m = Match.and(m, same != neg ? Match.YES : Match.NO);
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
              Match.and(
                  m,
                  neg
                      ? Match.not(Match.portIn(arg, flow.port, ",", ":"))
                      : Match.portIn(arg, flow.port, ",", ":"));
          break;
        case "--ctstate":
        case "--state":
          i++;
          boolean fresh = arg.toUpperCase(Locale.ROOT).contains("NEW");
          m = Match.and(m, fresh != neg ? Match.YES : Match.NO);
          break;
        case "-i":
        case "--in-interface":
          i++;
          m = Match.and(m, arg.equals("lo") ? (neg ? Match.YES : Match.NO) : Match.MAYBE);
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
          m = Match.and(m, Match.MAYBE);
          while (i + 1 < t.size() && !t.get(i + 1).startsWith("-") && !t.get(i + 1).equals("!")) {
            i++;
          }
          break;
      }
    }
    return new Rule(m, verdict, text);
  }

  /** What a {@code -j} target does to the flow: accept, drop, return, jump:CHAIN or nothing. */
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
}
