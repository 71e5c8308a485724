package io.memwire.tpcds.run;

import io.memwire.localcluster.SparkKeys;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A named shuffle configuration: the Spark settings that select and tune a shuffle manager.
 * Built-in names: {@code sort} (Spark's own sort shuffle), {@code rdma-tcp} and {@code rdma-verbs}
 * (Memwire's {@value #RDMA_MANAGER} with that block-transfer provider and no fallback). Any other
 * configuration is written inline as {@code name{key=value;key=value}}, where {@code
 * manager=<class>} is short for {@code spark.shuffle.manager}.
 */
public record ShuffleConfig(String name, Map<String, String> sparkConf) {
  /** Memwire's shuffle manager class. */
  public static final String RDMA_MANAGER = "io.memwire.shuffle.RdmaShuffleManager";

  /** The setting that picks the RDMA manager's block-transfer provider. */
  public static final String PROVIDER_KEY = SparkKeys.MEMWIRE_PROVIDER;

  /**
   * The RDMA manager's switch for serving blocks through Spark's transfer when one-sided reads are
   * impossible.
   */
  public static final String FALLBACK_KEY = SparkKeys.MEMWIRE_FALLBACK;

  private static final String MANAGER_KEY = SparkKeys.SHUFFLE_MANAGER;
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

  /** Validates the name and copies the settings. */
  public ShuffleConfig {
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "Bad configuration name '" + name + "': use letters, digits, '.', '_', '-'");
    }
    sparkConf = Collections.unmodifiableMap(new LinkedHashMap<>(sparkConf));
  }

  /** The shuffle manager class (or Spark's short name) this configuration selects. */
  public String manager() {
    return sparkConf.getOrDefault(MANAGER_KEY, "sort");
  }

  /** The block-transfer provider of the RDMA manager, or "-" for other managers. */
  public String provider() {
    return sparkConf.getOrDefault(PROVIDER_KEY, "-");
  }

  /** This configuration with {@code extra} settings added (overriding its own). */
  public ShuffleConfig with(Map<String, String> extra) {
    Map<String, String> merged = new LinkedHashMap<>(sparkConf);
    merged.putAll(extra);
    return new ShuffleConfig(name, merged);
  }

  /** A configuration using manager class {@code manager} with additional settings. */
  public static ShuffleConfig of(String name, String manager, Map<String, String> settings) {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put(MANAGER_KEY, manager);
    conf.putAll(settings);
    return new ShuffleConfig(name, conf);
  }

  /**
   * The RDMA manager with {@code provider}. Fallback to Spark's own transfer is off: a benchmark
   * must measure the one-sided path or fail, not quietly measure something else.
   */
  private static ShuffleConfig rdma(String name, String provider) {
    return of(name, RDMA_MANAGER, Map.of(PROVIDER_KEY, provider, FALLBACK_KEY, "false"));
  }

  /**
   * Parses a comma-separated list of built-in names and inline definitions; the first is the
   * reference.
   */
  public static List<ShuffleConfig> parseList(String text) {
    List<ShuffleConfig> configs = new ArrayList<>();
    for (String item : splitTopLevel(text)) {
      ShuffleConfig config = parse(item.trim());
      if (configs.stream().anyMatch(c -> c.name().equals(config.name()))) {
        throw new IllegalArgumentException(
            "--configs: configuration '" + config.name() + "' given twice");
      }
      configs.add(config);
    }
    if (configs.isEmpty()) {
      throw new IllegalArgumentException("--configs names no configuration");
    }
    return configs;
  }

  /** Parses one built-in name or inline definition. */
  public static ShuffleConfig parse(String item) {
    int brace = item.indexOf('{');
    if (brace < 0) {
      return switch (item) {
        case "sort" -> of("sort", "sort", Map.of());
        case "rdma-tcp" -> rdma("rdma-tcp", "tcp");
        case "rdma-verbs" -> rdma("rdma-verbs", "verbs");
        default ->
            throw new IllegalArgumentException(
                "--configs: unknown configuration '"
                    + item
                    + "'; built-in: sort, rdma-tcp, rdma-verbs; or define one as name{manager=<class>;key=value}");
      };
    }
    if (!item.endsWith("}")) {
      throw new IllegalArgumentException("--configs: '" + item + "' must end with '}'");
    }
    String name = item.substring(0, brace).trim();
    Map<String, String> conf = new LinkedHashMap<>();
    for (String pair : item.substring(brace + 1, item.length() - 1).split(";")) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(
            "--configs: '" + pair + "' in '" + name + "' is not key=value");
      }
      String key = pair.substring(0, eq).trim();
      conf.put(key.equals("manager") ? MANAGER_KEY : key, pair.substring(eq + 1).trim());
    }
    if (!conf.containsKey(MANAGER_KEY)) {
      throw new IllegalArgumentException(
          "--configs: '" + name + "' sets no manager (manager=<class> or sort)");
    }
    return new ShuffleConfig(name, conf);
  }

  private static List<String> splitTopLevel(String text) {
    List<String> items = new ArrayList<>();
    int depth = 0;
    StringBuilder current = new StringBuilder();
    for (char c : text.toCharArray()) {
      if (c == '{') {
        depth++;
      } else if (c == '}') {
        depth--;
      }
      if (c == ',' && depth == 0) {
        items.add(current.toString());
        current.setLength(0);
      } else {
        current.append(c);
      }
    }
    items.add(current.toString());
    items.removeIf(String::isBlank);
    return items;
  }
}
