package io.memwire.transfer.metrics;

import java.util.Locale;
import java.util.Objects;

/**
 * One metric, declared once: the name users see (a stats key, a metric name), whether it only grows
 * or goes up and down, its unit and what it means. Snapshots are keyed by it, and exporters and
 * documentation tables iterate the declared lists ({@link TransportMetrics#ALL}) instead of
 * repeating names.
 *
 * <p>A name may hold one {@code <part>} placeholder, for a family of metrics with one member per
 * runtime part (for example one per child allocator); {@link #of} names a member.
 *
 * @param name the name as users see it
 * @param kind counter or gauge
 * @param unit what one unit of the value is
 * @param doc what it measures (one Markdown sentence or two)
 */
public record Metric(String name, Kind kind, Unit unit, String doc) {

  /** How a value moves. */
  public enum Kind {
    /** Counts events since start: only grows. */
    COUNTER,
    /** A level now: goes up and down. */
    GAUGE;

    /** The lower-case name shown in documentation tables. */
    public String text() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** What one unit of a value is. */
  public enum Unit {
    /** A number of things (reads, connections, regions...). */
    COUNT("count"),
    /** Bytes. */
    BYTES("bytes"),
    /** 1 when a condition holds, else 0. */
    FLAG("0 or 1"),
    /** Microseconds (a counter of them is a sum of durations). */
    MICROSECONDS("µs");

    private final String text;

    Unit(String text) {
      this.text = text;
    }

    /** The unit as documentation tables show it. */
    public String text() {
      return text;
    }
  }

  /** Checks that every part is given. */
  public Metric {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, name);
    Objects.requireNonNull(unit, name);
    if (doc == null || doc.isBlank()) {
      throw new IllegalArgumentException(name + ": doc is required");
    }
  }

  /** A counter. */
  public static Metric counter(String name, Unit unit, String doc) {
    return new Metric(name, Kind.COUNTER, unit, doc);
  }

  /** A gauge. */
  public static Metric gauge(String name, Unit unit, String doc) {
    return new Metric(name, Kind.GAUGE, unit, doc);
  }

  /** Whether the name holds a {@code <part>} placeholder. */
  public boolean isFamily() {
    return name.indexOf('<') >= 0;
  }

  /**
   * The member of this family for {@code part}: the placeholder replaced, kind, unit and doc kept.
   *
   * @throws IllegalStateException when this metric is not a family
   */
  public Metric of(String part) {
    int open = name.indexOf('<');
    int close = name.indexOf('>', open);
    if (open < 0 || close < 0) {
      throw new IllegalStateException(name + " is not a family of metrics");
    }
    return new Metric(name.substring(0, open) + part + name.substring(close + 1), kind, unit, doc);
  }

  /** Whether {@code key} is this metric's name, or a member's name when this is a family. */
  public boolean matches(String key) {
    if (!isFamily()) {
      return name.equals(key);
    }
    int open = name.indexOf('<');
    String head = name.substring(0, open);
    String tail = name.substring(name.indexOf('>', open) + 1);
    return key.length() > head.length() + tail.length()
        && key.startsWith(head)
        && key.endsWith(tail);
  }

  @Override
  public String toString() {
    return name;
  }
}
