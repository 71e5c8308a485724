package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * conf-templates/grafana/memwire-dashboard.json: well-formed JSON (checked by a strict grammar
 * walk: no JSON library is on this module's classpath) that names only metrics the service
 * declares.
 */
class GrafanaDashboardTest {
  private static final Path DASHBOARD =
      Path.of("..", "conf-templates", "grafana", "memwire-dashboard.json");

  @Test
  void theDashboardIsJsonAndNamesOnlyDeclaredServiceMetrics() throws Exception {
    String json = Files.readString(DASHBOARD);
    Json p = new Json(json);
    p.value();
    p.space();
    assertEquals(json.length(), p.at, "trailing text after the JSON value");
    Set<String> declared =
        ServiceMetrics.ALL.stream()
            .map(ServiceMetrics.Metric::exposedName)
            .collect(Collectors.toSet());
    Set<String> used = new TreeSet<>();
    Matcher m = Pattern.compile(ServiceMetrics.NAMESPACE + "[a-z_]+").matcher(json);
    while (m.find()) {
      used.add(m.group());
    }
    assertTrue(used.size() > 10, "the dashboard shows the service's metrics: " + used);
    used.removeAll(declared);
    assertTrue(used.isEmpty(), "not declared in ServiceMetrics: " + used);
    assertTrue(json.contains("MemwireMetricsPlugin_total_oneSided_blocks_Value"), "executors");
    assertTrue(json.contains("memwire_nic_counter_total"), "the service's NIC counters");
    assertTrue(json.contains("MemwireMetricsPlugin_nic_"), "the executors' nic.* gauges");
  }

  @Test
  void theCheckerRefusesMalformedJson() {
    for (String bad : new String[] {"{", "{\"a\":}", "[1,]", "{\"a\" 1}", "\"x", "tru", "01"}) {
      Json p = new Json(bad);
      boolean refused;
      try {
        p.value();
        p.space();
        refused = p.at != bad.length();
      } catch (IllegalArgumentException e) {
        refused = true;
      }
      assertTrue(refused, bad);
    }
  }

  /** A strict walk over RFC 8259's grammar; throws at the first offending character. */
  private static final class Json {
    final String s;
    int at;

    Json(String s) {
      this.s = s;
    }

    void space() {
      while (at < s.length() && " \t\r\n".indexOf(s.charAt(at)) >= 0) {
        at++;
      }
    }

    IllegalArgumentException bad(String what) {
      return new IllegalArgumentException(what + " at offset " + at);
    }

    void expect(char c) {
      space();
      if (at >= s.length() || s.charAt(at) != c) {
        throw bad("expected '" + c + "'");
      }
      at++;
    }

    boolean peek(char c) {
      space();
      return at < s.length() && s.charAt(at) == c;
    }

    void value() {
      space();
      if (at >= s.length()) {
        throw bad("value expected");
      }
      char c = s.charAt(at);
      if (c == '{') {
        at++;
        if (!peek('}')) {
          do {
            space();
            string();
            expect(':');
            value();
          } while (comma());
        }
        expect('}');
      } else if (c == '[') {
        at++;
        if (!peek(']')) {
          do {
            value();
          } while (comma());
        }
        expect(']');
      } else if (c == '"') {
        string();
      } else if (!literal("true") && !literal("false") && !literal("null")) {
        number();
      }
    }

    boolean comma() {
      if (peek(',')) {
        at++;
        return true;
      }
      return false;
    }

    boolean literal(String word) {
      if (s.startsWith(word, at)) {
        at += word.length();
        return true;
      }
      return false;
    }

    void string() {
      if (at >= s.length() || s.charAt(at) != '"') {
        throw bad("string expected");
      }
      at++;
      while (true) {
        if (at >= s.length()) {
          throw bad("unterminated string");
        }
        char c = s.charAt(at++);
        if (c == '"') {
          return;
        }
        if (c < 0x20) {
          throw bad("control character in a string");
        }
        if (c == '\\') {
          if (at >= s.length()) {
            throw bad("unterminated escape");
          }
          char e = s.charAt(at++);
          if (e == 'u') {
            if (at + 4 > s.length() || !s.substring(at, at + 4).matches("[0-9a-fA-F]{4}")) {
              throw bad("bad \\u escape");
            }
            at += 4;
          } else if ("\"\\/bfnrt".indexOf(e) < 0) {
            throw bad("bad escape");
          }
        }
      }
    }

    void number() {
      Matcher m = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?").matcher(s);
      m.region(at, s.length());
      if (!m.lookingAt()) {
        throw bad("value expected");
      }
      at = m.end();
    }
  }
}
