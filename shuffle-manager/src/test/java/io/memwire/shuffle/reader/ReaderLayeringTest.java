package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The classes of {@code reader/} refer to each other one way: no class reaches, through the others,
 * a class that refers to it (no cycle), and the value types at the bottom refer only to each other.
 * A reference is a class's simple name in its code (comments and strings left out).
 */
class ReaderLayeringTest {
  private static final Path SOURCES = Path.of("src", "main", "java", "io", "memwire", "shuffle");

  /** The immutable values the stages hand each other: the bottom of the package. */
  private static final Set<String> VALUES =
      Set.of(
          "Route",
          "Peer",
          "Wanted",
          "MapBlocks",
          "SlottedBlocks",
          "LocatedBlock",
          "MapOutput",
          "Miss",
          "Found",
          "BlockChecksum",
          "Failures",
          "FetchPlan",
          "ReadSettings");

  private static final Pattern NAME = Pattern.compile("\\b[A-Z]\\w*\\b");

  @Test
  void referencesInsideTheReaderPointOneWay() throws IOException {
    Map<String, Set<String>> refs = references(SOURCES.resolve("reader"));
    List<String> upward = new ArrayList<>();
    refs.forEach(
        (from, tos) -> {
          for (String to : tos) {
            if (reaches(refs, to, from)) {
              upward.add(from + " -> " + to);
            }
          }
        });
    assertEquals(List.of(), upward, "references that close a cycle");
  }

  @Test
  void valueTypesReferOnlyToValueTypes() throws IOException {
    Map<String, Set<String>> refs = references(SOURCES.resolve("reader"));
    List<String> wrong = new ArrayList<>();
    for (String v : VALUES) {
      if (!refs.containsKey(v)) {
        continue; // declared ahead of the class, or gone
      }
      for (String to : refs.get(v)) {
        if (!VALUES.contains(to)) {
          wrong.add(v + " -> " + to);
        }
      }
    }
    assertTrue(refs.keySet().containsAll(Set.of("Route", "Wanted", "LocatedBlock")), "found");
    assertEquals(List.of(), wrong, "value types that refer to a class above them");
  }

  /** Each class of the package with the other classes of the package its code names. */
  private static Map<String, Set<String>> references(Path dir) throws IOException {
    Map<String, String> code = new TreeMap<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (name.endsWith(".java") && !name.equals("package-info.java")) {
          code.put(name.substring(0, name.length() - 5), strip(Files.readString(f)));
        }
      }
    }
    Map<String, Set<String>> refs = new TreeMap<>();
    code.forEach(
        (name, text) -> {
          Set<String> tos = new TreeSet<>();
          Matcher m = NAME.matcher(text);
          while (m.find()) {
            String to = m.group();
            if (!to.equals(name) && code.containsKey(to)) {
              tos.add(to);
            }
          }
          refs.put(name, tos);
        });
    return refs;
  }

  private static String strip(String java) {
    return java.replaceAll("(?s)/\\*.*?\\*/", "")
        .replaceAll("//[^\n]*", "")
        .replaceAll("\"(\\\\.|[^\"\\\\])*\"", "\"\"");
  }

  private static boolean reaches(Map<String, Set<String>> refs, String from, String target) {
    Set<String> seen = new HashSet<>();
    Deque<String> todo = new ArrayDeque<>(List.of(from));
    while (!todo.isEmpty()) {
      for (String next : refs.getOrDefault(todo.pop(), Set.of())) {
        if (next.equals(target)) {
          return true;
        }
        if (seen.add(next)) {
          todo.push(next);
        }
      }
    }
    return false;
  }
}
