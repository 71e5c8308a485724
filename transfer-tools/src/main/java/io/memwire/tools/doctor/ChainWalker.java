package io.memwire.tools.doctor;

import java.util.Locale;
import java.util.Map;

/**
 * Rule evaluation: follows a base chain, its jumps and gotos, the way the kernel would for the
 * first packet of a new flow, to a verdict. A rule that may or may not match cannot decide; it is
 * remembered, and turns a later definite verdict it could have pre-empted into "depends".
 */
final class ChainWalker {
  private ChainWalker() {}

  /** Reads one rule's text as it applies to a flow: iptables' or nft's language. */
  interface RuleParser {
    Rule parse(String text, Firewall.Flow flow);
  }

  /** Follows a base chain to a verdict. */
  static Firewall.Result walk(
      Chain base, Map<String, Chain> chains, Firewall.Flow flow, RuleParser parser, String where) {
    String[] maybe = new String[2]; // {first rule that may accept, first that may drop}
    Firewall.Result r = walk(base, chains, flow, parser, where, 0, maybe);
    if (r == null) {
      r = new Firewall.Result(Firewall.Verdict.ACCEPTED, where + ": no policy");
    }
    return settle(r, maybe[0], maybe[1]);
  }

  /**
   * Follows one chain; null when it ends (or RETURNs) without a verdict, so the caller goes on.
   * Verdicts of rules that may or may not match are collected in {@code maybe}.
   */
  private static Firewall.Result walk(
      Chain chain,
      Map<String, Chain> chains,
      Firewall.Flow flow,
      RuleParser parser,
      String where,
      int depth,
      String[] maybe) {
    if (chain == null || depth > 16) {
      return new Firewall.Result(
          Firewall.Verdict.DEPENDS, where + ": chain missing or nested too deep");
    }
    for (String line : chain.lines) {
      Rule r = parser.parse(line, flow);
      if (r.match == Match.NO || r.verdict == null) {
        continue;
      }
      Firewall.Result decided;
      if (r.verdict.startsWith("jump:") || r.verdict.startsWith("goto:")) {
        String name = r.verdict.substring(5);
        Chain sub = chains.get(name);
        String subWhere = where.substring(0, where.lastIndexOf(' ') + 1) + name;
        if (sub == null) {
          decided = new Firewall.Result(Firewall.Verdict.DEPENDS, subWhere + ": unknown chain");
        } else if (r.match == Match.MAYBE) {
          // Whatever the sub-chain decides, it may not apply: record it as possible only.
          String[] inner = new String[2];
          Firewall.Result res = walk(sub, chains, flow, parser, subWhere, depth + 1, inner);
          note(maybe, inner[0], inner[1]);
          if (res != null) {
            note(
                maybe,
                res.verdict == Firewall.Verdict.ACCEPTED ? res.why : null,
                res.verdict == Firewall.Verdict.ACCEPTED ? null : res.why);
          }
          continue;
        } else {
          Firewall.Result res = walk(sub, chains, flow, parser, subWhere, depth + 1, maybe);
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
            new Firewall.Result(
                r.verdict.equals("accept") ? Firewall.Verdict.ACCEPTED : Firewall.Verdict.DROPPED,
                where + " rule `" + r.text + "`");
      }
      if (r.match == Match.MAYBE || decided.verdict == Firewall.Verdict.DEPENDS) {
        note(
            maybe,
            decided.verdict == Firewall.Verdict.ACCEPTED ? decided.why : null,
            decided.verdict == Firewall.Verdict.ACCEPTED ? null : decided.why);
        continue;
      }
      return decided;
    }
    if (chain.policy == null || depth > 0) {
      return null;
    }
    return new Firewall.Result(
        chain.policy.equals("drop") ? Firewall.Verdict.DROPPED : Firewall.Verdict.ACCEPTED,
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
  private static Firewall.Result settle(
      Firewall.Result decided, String maybeAccept, String maybeDrop) {
    if (decided.verdict == Firewall.Verdict.DROPPED && maybeAccept != null) {
      return new Firewall.Result(
          Firewall.Verdict.DEPENDS,
          "dropped by " + decided.why + " unless " + maybeAccept + " accepts it first");
    }
    if (decided.verdict == Firewall.Verdict.ACCEPTED && maybeDrop != null) {
      return new Firewall.Result(
          Firewall.Verdict.DEPENDS,
          "accepted by " + decided.why + " unless " + maybeDrop + " drops it first");
    }
    return decided;
  }
}
