package io.memwire.tools.doctor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The nftables side of {@link Firewall}: reads the {@code ip} and {@code inet} tables of {@code nft
 * list ruleset} output into chains, finds the base chains on the input hook, and reads each rule
 * into what it means for one flow.
 */
final class NftRules {
  private NftRules() {}

  /**
   * The combined verdict of every base chain on the input hook of the {@code ip} and {@code inet}
   * tables in {@code nft list ruleset} output: a packet must pass all of them.
   */
  static Firewall.Result verdict(String ruleset, Firewall.Flow flow) {
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
    Firewall.Result combined =
        new Firewall.Result(Firewall.Verdict.ACCEPTED, "no input filter chain");
    for (String[] b : bases) {
      Map<String, Chain> chains = tables.get(b[0]);
      Firewall.Result r =
          ChainWalker.walk(
              chains.get(b[1]), chains, flow, NftRules::rule, "nft " + b[0] + " " + b[1]);
      if (rank(r.verdict) > rank(combined.verdict)
          || (combined.why.startsWith("no input") && r.verdict == Firewall.Verdict.ACCEPTED)) {
        combined = r;
      }
    }
    return combined;
  }

  /** How strongly a verdict holds when chains combine: drop over depends over accept. */
  private static int rank(Firewall.Verdict v) {
    return v == Firewall.Verdict.DROPPED ? 2 : v == Firewall.Verdict.DEPENDS ? 1 : 0;
  }

  private static int count(String s, char c) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      n += s.charAt(i) == c ? 1 : 0;
    }
    return n;
  }

  /** One rule line's match and verdict for {@code flow}. */
  private static Rule rule(String text, Firewall.Flow flow) {
    List<String> t = Rule.tokens(text);
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
            Match pm = tok.equals(flow.proto) ? Match.portIn(ports, flow.port, ",", "-") : Match.NO;
            m = Match.and(m, neg && tok.equals(flow.proto) ? Match.not(pm) : pm);
          } else {
            m = Match.and(m, Match.MAYBE);
            i++;
          }
          break;
        case "th":
          if (a1.equals("dport")) {
            i += 2;
            m = Match.and(m, Match.portIn(a2, flow.port, ",", "-"));
          } else {
            m = Match.and(m, Match.MAYBE);
          }
          break;
        case "meta":
          if (a1.equals("l4proto")) {
            i += 2;
            m = Match.and(m, a2.contains(flow.proto) ? Match.YES : Match.NO);
          } else if (a1.equals("iif") || a1.equals("iifname")) {
            i += 2;
            m = Match.and(m, a2.replace("\"", "").equals("lo") ? Match.NO : Match.MAYBE);
          } else {
            m = Match.and(m, Match.MAYBE);
          }
          break;
        case "ip":
          if (a1.equals("protocol")) {
            i += 2;
            m = Match.and(m, a2.contains(flow.proto) ? Match.YES : Match.NO);
          } else {
            m = Match.and(m, Match.MAYBE);
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
            m = Match.and(m, a2.contains("new") ? Match.YES : Match.NO);
          } else {
            m = Match.and(m, Match.MAYBE);
            i += 2;
          }
          break;
        case "iif":
        case "iifname":
          i++;
          m = Match.and(m, a1.replace("\"", "").equals("lo") ? Match.NO : Match.MAYBE);
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
          m = Match.and(m, Match.MAYBE);
          break;
      }
    }
    return new Rule(m, verdict, text);
  }
}
