package io.memwire.tools.doctor;

/**
 * Whether a firewall rule matches a flow: yes, no, or maybe (it tests something the doctor cannot
 * know, such as the source address), and how the tests of one rule combine.
 */
enum Match {
  YES,
  NO,
  MAYBE;

  /** Both must match: NO wins over MAYBE, MAYBE over YES. */
  static Match and(Match a, Match b) {
    if (a == Match.NO || b == Match.NO) {
      return Match.NO;
    }
    return a == Match.MAYBE || b == Match.MAYBE ? Match.MAYBE : Match.YES;
  }

  /** The opposite; MAYBE stays MAYBE. */
  static Match not(Match a) {
    return a == Match.YES ? Match.NO : a == Match.NO ? Match.YES : Match.MAYBE;
  }

  /** Whether {@code port} is in a list like {@code 22,7000:7100} or {@code {22, 7000-7100}}. */
  static Match portIn(String spec, int port, String listSep, String rangeSep) {
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
}
