package io.memwire.transfer.settings;

import io.memwire.transfer.TransferConfigException;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/** Checks and tables shared by every group of {@link Setting}s. */
public final class Settings {
  private Settings() {}

  /** One row of a documentation table. */
  public record Row(String key, String defaultText, String rangeText, String doc) {
    /** The row of {@code s} with {@code prefix} in front of its name. */
    public static Row of(String prefix, Setting<?> s) {
      return new Row(prefix + s.name(), s.defaultText(), s.rangeText(), s.doc());
    }
  }

  /**
   * Refuses any key under {@code prefix} whose remainder is not in {@code known}, so a misspelt key
   * fails at start instead of being ignored.
   *
   * @throws TransferConfigException naming the unknown key
   */
  public static void refuseUnknown(
      Map<String, String> props, String prefix, Collection<String> known) {
    for (String key : props.keySet()) {
      if (key.startsWith(prefix) && !known.contains(key.substring(prefix.length()))) {
        throw new TransferConfigException(
            TransferConfigException.Problem.UNKNOWN_KEY,
            key,
            "unknown configuration key " + key + "; known keys under " + prefix + ": " + known);
      }
    }
  }

  /**
   * A Markdown table with the given four column titles and separator line, one line per row, keys
   * in backquotes.
   */
  public static String markdownTable(String header, String separator, List<Row> rows) {
    StringBuilder sb = new StringBuilder();
    sb.append(header).append('\n').append(separator).append('\n');
    for (Row r : rows) {
      sb.append("| `")
          .append(r.key())
          .append("` | ")
          .append(r.defaultText())
          .append(" | ")
          .append(r.rangeText())
          .append(" | ")
          .append(r.doc())
          .append(" |\n");
    }
    return sb.toString();
  }
}
