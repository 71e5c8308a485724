package io.memwire.transfer.settings;

import io.memwire.transfer.TransferConfigException;
import java.util.function.LongFunction;
import java.util.function.ToLongFunction;

/**
 * How the value of a {@link Setting} is parsed from text, checked against its range, and its range
 * printed for the docs. Numeric types keep their bounds as a long "measure" (a count, bytes or
 * milliseconds) and print them with {@link Units}; text types use their own parser.
 *
 * @param <T> the value type
 */
final class ValueType<T> {
  final boolean numeric;
  final long min;
  final long max;
  final String malformed;
  final ToLongFunction<String> measureParser;
  final LongFunction<String> unit;
  final LongFunction<T> make;
  final ToLongFunction<T> measure;
  final String note;
  final String fixedRange;
  final Setting.Parser<T> parser;

  ValueType(
      long min,
      long max,
      String malformed,
      ToLongFunction<String> measureParser,
      LongFunction<String> unit,
      LongFunction<T> make,
      ToLongFunction<T> measure,
      String note) {
    if (min > max) {
      throw new IllegalArgumentException("min " + min + " > max " + max);
    }
    this.numeric = true;
    this.min = min;
    this.max = max;
    this.malformed = malformed;
    this.measureParser = measureParser;
    this.unit = unit;
    this.make = make;
    this.measure = measure;
    this.note = note;
    this.fixedRange = null;
    this.parser = null;
  }

  ValueType(String rangeText, Setting.Parser<T> parser) {
    this.numeric = false;
    this.min = 0;
    this.max = 0;
    this.malformed = null;
    this.measureParser = null;
    this.unit = null;
    this.make = null;
    this.measure = null;
    this.note = null;
    this.fixedRange = rangeText;
    this.parser = parser;
  }

  String rangeText() {
    if (!numeric) {
      return fixedRange;
    }
    return unit.apply(min) + " to " + unit.apply(max) + (note == null ? "" : "; " + note);
  }

  T parse(String key, String raw) {
    if (raw == null) {
      throw new TransferConfigException(
          TransferConfigException.Problem.MISSING, key, key + " has no value");
    }
    String s = raw.trim();
    if (!numeric) {
      return parser.parse(key, s);
    }
    long m;
    try {
      m = measureParser.applyAsLong(s);
    } catch (RuntimeException e) {
      throw new TransferConfigException(
          TransferConfigException.Problem.MALFORMED, key, key + "=" + raw + " " + malformed);
    }
    checkMeasure(key, m, raw);
    return make.apply(m);
  }

  void check(String key, T value, String shown) {
    if (numeric) {
      checkMeasure(key, measure.applyAsLong(value), shown);
    }
  }

  private void checkMeasure(String key, long m, String shown) {
    if (m < min || m > max) {
      throw new TransferConfigException(
          TransferConfigException.Problem.OUT_OF_RANGE,
          key,
          key + "=" + shown + " is out of range: " + rangeText());
    }
  }
}
