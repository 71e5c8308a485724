package io.memwire.tools.doctor;

import java.util.ArrayList;
import java.util.List;

/**
 * One firewall rule as it applies to one flow: whether it matches and what it decides, with its
 * text for the doctor's explanation; and the tokenizer both rule languages share.
 */
final class Rule {
  final Match match;
  final String verdict; // accept, drop, jump:X, goto:X, return, or null (no verdict)
  final String text;

  Rule(Match match, String verdict, String text) {
    this.match = match;
    this.verdict = verdict;
    this.text = text;
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
