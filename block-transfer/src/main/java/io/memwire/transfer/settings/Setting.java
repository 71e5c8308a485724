package io.memwire.transfer.settings;

import io.memwire.transfer.TransferConfigException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongFunction;
import java.util.function.ToLongFunction;

/**
 * One configuration key, declared once: name, meaning, typed default, parser, allowed range and the
 * version that introduced it. Validation, the range text shown in documentation tables and the
 * error messages all come from this one declaration, so they cannot disagree. Numeric settings keep
 * their bounds as a long "measure" (a count, bytes or milliseconds) and print them with the same
 * unit formatter the docs use.
 *
 * <p>Declare with {@link #key(String)}, for example {@code
 * Setting.key("ioThreads").doc("...").since("0.1.0").count(1, 64).withDefault("2")}.
 *
 * @param <T> the value type
 */
public final class Setting<T> {
  private final String name;
  private final String doc;
  private final String since;
  private final ValueType<T> type;
  private final String defaultText;
  private final T defaultValue;

  private Setting(
      String name,
      String doc,
      String since,
      ValueType<T> type,
      String defaultText,
      T defaultValue) {
    this.name = name;
    this.doc = doc;
    this.since = since;
    this.type = type;
    this.defaultText = defaultText;
    this.defaultValue = defaultValue;
  }

  /** Starts declaring a setting called {@code name} (without any consumer prefix). */
  public static Declaration key(String name) {
    return new Declaration(name);
  }

  /** The key without prefix. */
  public String name() {
    return name;
  }

  /** The full key as a consumer spells it: {@code prefix} followed by the name. */
  public String name(String prefix) {
    return prefix + name;
  }

  /** What the setting does (one Markdown paragraph). */
  public String doc() {
    return doc;
  }

  /** Version of Memwire that introduced the setting. */
  public String since() {
    return since;
  }

  /** The default as documented (the string it was declared with, or the text for "unset"). */
  public String defaultText() {
    return defaultText;
  }

  /** The typed default; null for a setting that is unset unless given. */
  public T defaultValue() {
    return defaultValue;
  }

  /** The allowed values as documented, derived from the bounds the check enforces. */
  public String rangeText() {
    return type.rangeText();
  }

  /** Lower bound of the measure (count, bytes or milliseconds) for numeric settings. */
  public OptionalLong min() {
    return type.numeric ? OptionalLong.of(type.min) : OptionalLong.empty();
  }

  /** Upper bound of the measure for numeric settings. */
  public OptionalLong max() {
    return type.numeric ? OptionalLong.of(type.max) : OptionalLong.empty();
  }

  /**
   * Parses and checks {@code raw} (surrounding blanks ignored).
   *
   * @param prefix put in front of the name in error messages
   * @throws TransferConfigException naming the full key when the value is malformed or out of range
   */
  public T parse(String prefix, String raw) {
    return type.parse(prefix + name, raw);
  }

  /** Checks a typed value against the range; returns it. */
  public T check(String prefix, T value) {
    Objects.requireNonNull(value, () -> prefix + name + " must not be null");
    type.check(
        prefix + name,
        value,
        value instanceof Duration d ? d.toMillis() + "ms" : String.valueOf(value));
    return value;
  }

  /** The value of {@code prefix + name} in {@code props}, else the default (may be null). */
  public T valueIn(Map<String, String> props, String prefix) {
    String raw = props.get(prefix + name);
    return raw == null ? defaultValue : parse(prefix, raw);
  }

  /** Reads the JVM system property {@code name} (no prefix): the parsed value, or the default. */
  public Optional<T> fromSystemProperties() {
    String raw = System.getProperty(name);
    return raw == null || raw.isBlank()
        ? Optional.ofNullable(defaultValue)
        : Optional.of(parse("", raw));
  }

  @Override
  public String toString() {
    return name + " (default " + defaultText + ", " + rangeText() + ")";
  }

  /** Fluent declaration of a {@link Setting}; name, doc and since are required. */
  public static final class Declaration {
    private final String name;
    private String doc;
    private String since;

    private Declaration(String name) {
      this.name = name;
    }

    public Declaration doc(String d) {
      this.doc = d;
      return this;
    }

    public Declaration since(String s) {
      this.since = s;
      return this;
    }

    /** A whole number of things, {@code min} to {@code max}; {@code note} follows the range. */
    public Typed<Integer> count(int min, int max, String... note) {
      return new Typed<>(
          this,
          numeric(
              min,
              max,
              "is not a whole number",
              Long::parseLong,
              Units::plainText,
              v -> (int) v,
              Integer::longValue,
              note));
    }

    /** Like {@link #count} for long values. */
    public Typed<Long> longCount(long min, long max, String... note) {
      return new Typed<>(
          this,
          numeric(
              min,
              max,
              "is not a whole number",
              Long::parseLong,
              Units::plainText,
              v -> v,
              Long::longValue,
              note));
    }

    /** A number of bytes ({@code 4096}, {@code 64k}, {@code 1g}...), {@code min} to {@code max}. */
    public Typed<Long> bytes(long min, long max, String... note) {
      return new Typed<>(
          this,
          numeric(
              min,
              max,
              "is not a size (bytes, or a number with k, m, g, t, p)",
              Units::parseBytes,
              Units::bytesText,
              v -> v,
              Long::longValue,
              note));
    }

    /**
     * A duration ({@code 500ms}, {@code 10s}, {@code 2min}, {@code 1h}); bounds in milliseconds.
     */
    public Typed<Duration> duration(long minMillis, long maxMillis, String... note) {
      return new Typed<>(
          this,
          numeric(
              minMillis,
              maxMillis,
              "is not a duration (milliseconds, or a number with ms, s, min, h)",
              s -> Units.parseTime(s).toMillis(),
              Units::millisText,
              Duration::ofMillis,
              Duration::toMillis,
              note));
    }

    /** {@code true} or {@code false}. */
    public Typed<Boolean> bool() {
      return new Typed<>(
          this,
          new ValueType<>(
              "true, false",
              (key, s) -> {
                String v = s.toLowerCase(Locale.ROOT);
                if (!v.equals("true") && !v.equals("false")) {
                  throw new TransferConfigException(
                      TransferConfigException.Problem.MALFORMED,
                      key,
                      key + "=" + s + " is not true or false");
                }
                return Boolean.valueOf(v);
              }));
    }

    /**
     * A free-form value: {@code parser} turns the trimmed text into a value or throws a {@link
     * TransferConfigException} naming the key it is given; {@code rangeText} says what is accepted.
     */
    public <T> Typed<T> text(String rangeText, Parser<T> parser) {
      return new Typed<>(this, new ValueType<>(rangeText, parser));
    }

    private static <T> ValueType<T> numeric(
        long min,
        long max,
        String malformed,
        ToLongFunction<String> measureParser,
        LongFunction<String> unit,
        LongFunction<T> make,
        ToLongFunction<T> measure,
        String[] note) {
      return new ValueType<>(
          min,
          max,
          malformed,
          measureParser,
          unit,
          make,
          measure,
          note.length == 0 ? null : String.join("; ", note));
    }
  }

  /** A declaration with its type; finish it with a default. */
  public static final class Typed<T> {
    private final Declaration d;
    private final ValueType<T> type;

    private Typed(Declaration d, ValueType<T> type) {
      this.d = d;
      this.type = type;
    }

    /** The setting with {@code text} as its default, parsed and checked like any given value. */
    public Setting<T> withDefault(String text) {
      return create(text, type.parse(d.name + " (default)", text));
    }

    /** A setting that is unset unless given; {@code unsetText} is what the docs show for unset. */
    public Setting<T> optional(String unsetText) {
      return create(unsetText, null);
    }

    private Setting<T> create(String text, T value) {
      if (d.doc == null || d.doc.isBlank() || d.since == null) {
        throw new IllegalStateException(d.name + ": doc and since are required");
      }
      return new Setting<>(d.name, d.doc, d.since, type, text, value);
    }
  }

  /** Turns the text of a value into a value, or throws naming {@code key}. */
  @FunctionalInterface
  public interface Parser<T> {
    T parse(String key, String trimmed);
  }
}
