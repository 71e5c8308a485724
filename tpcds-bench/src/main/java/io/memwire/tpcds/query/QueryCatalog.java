package io.memwire.tpcds.query;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The 99 TPC-DS queries (103 files: q14, q23, q24 and q39 come in parts a and b) as Spark ships
 * them in its {@code spark-sql_2.13} tests artifact under {@code tpcds/q*.sql}. They are read from
 * that artifact on the class path at run time; nothing is copied into this repository.
 */
public final class QueryCatalog {
  /** Resource folder of the queries inside Spark's tests artifact. */
  public static final String RESOURCE_DIR = "tpcds";

  private static final Pattern QUERY_FILE = Pattern.compile("q(\\d+)([a-z]?)\\.sql");

  /**
   * Named query sets. {@code default}: joins of the fact tables whose shuffles grow with the scale
   * factor (with broadcast joins off they shuffle tens of MB at SF 1) and that finish in seconds
   * each.
   */
  public static final Map<String, List<String>> NAMED_SETS;

  static {
    Map<String, List<String>> sets = new LinkedHashMap<>();
    sets.put("default", List.of("q3", "q7", "q19", "q42", "q50", "q55", "q93"));
    sets.put("smoke", List.of("q3", "q93"));
    sets.put("all", List.of()); // filled from the artifact on demand
    NAMED_SETS = Collections.unmodifiableMap(sets);
  }

  private final ClassLoader loader;

  @GuardedBy("this")
  private List<String> allNames;

  /** A catalog reading from the context class loader (falls back to this class's loader). */
  public QueryCatalog() {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    this.loader = context != null ? context : QueryCatalog.class.getClassLoader();
  }

  /**
   * All query names found in the artifact, in natural order (q1, q2, ..., q14a, q14b, ..., q99).
   */
  public synchronized List<String> allNames() {
    if (allNames == null) {
      allNames = List.copyOf(scan());
    }
    return allNames;
  }

  /** The SQL text of query {@code name} (e.g. {@code q7}). */
  public String sql(String name) {
    String resource = RESOURCE_DIR + "/" + name + ".sql";
    try (InputStream in = loader.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalArgumentException(
            "Unknown TPC-DS query '"
                + name
                + "' (no resource "
                + resource
                + " on the class path; is org.apache.spark:spark-sql_2.13:tests there?)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + resource, e);
    }
  }

  /**
   * Resolves a comma-separated selection of query names and set names ({@code default}, {@code
   * smoke}, {@code all}) into distinct query names in the order given.
   */
  public List<String> select(String selection) {
    Set<String> names = new LinkedHashSet<>();
    for (String raw : selection.split(",")) {
      String token = raw.trim().toLowerCase(Locale.ROOT);
      if (token.isEmpty()) {
        continue;
      }
      if (token.equals("all")) {
        names.addAll(allNames());
      } else if (NAMED_SETS.containsKey(token)) {
        names.addAll(NAMED_SETS.get(token));
      } else if (allNames().contains(token)) {
        names.add(token);
      } else {
        throw new IllegalArgumentException(
            "--queries: '"
                + raw.trim()
                + "' is neither a query (q1..q99, e.g. q14a)"
                + " nor a set "
                + NAMED_SETS.keySet());
      }
    }
    if (names.isEmpty()) {
      throw new IllegalArgumentException("--queries selects no query: '" + selection + "'");
    }
    return List.copyOf(names);
  }

  private List<String> scan() {
    URL anchor = loader.getResource(RESOURCE_DIR + "/q1.sql");
    if (anchor == null) {
      throw new IllegalStateException(
          "TPC-DS queries not found: "
              + RESOURCE_DIR
              + "/q1.sql is not on the class path (add org.apache.spark:spark-sql_2.13:tests)");
    }
    Set<String> names =
        new TreeSet<>(Comparator.comparingInt(QueryCatalog::number).thenComparing(n -> n));
    try {
      if (anchor.getProtocol().equals("jar")) {
        JarURLConnection connection = (JarURLConnection) anchor.openConnection();
        connection.setUseCaches(false);
        try (JarFile jar = connection.getJarFile()) {
          Enumeration<JarEntry> entries = jar.entries();
          while (entries.hasMoreElements()) {
            String entry = entries.nextElement().getName();
            if (entry.startsWith(RESOURCE_DIR + "/")) {
              addIfQuery(entry.substring(RESOURCE_DIR.length() + 1), names);
            }
          }
        }
      } else {
        try (Stream<Path> files = Files.list(Path.of(anchor.toURI()).getParent())) {
          files.forEach(f -> addIfQuery(f.getFileName().toString(), names));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot list TPC-DS queries next to " + anchor, e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException("Cannot list TPC-DS queries next to " + anchor, e);
    }
    return new ArrayList<>(names);
  }

  private static void addIfQuery(String fileName, Set<String> names) {
    Matcher m = QUERY_FILE.matcher(fileName);
    if (m.matches()) {
      names.add(fileName.substring(0, fileName.length() - ".sql".length()));
    }
  }

  private static int number(String name) {
    Matcher m = Pattern.compile("q(\\d+)[a-z]?").matcher(name);
    return m.matches() ? Integer.parseInt(m.group(1)) : Integer.MAX_VALUE;
  }
}
