package io.memwire.tpcds.verify;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Compares two {@link Answer}s as multisets of rows (order-insensitive): same columns, same number
 * of rows, and after sorting, every row equal. Decimals, integers, strings and dates must match
 * exactly; DOUBLE and FLOAT cells may differ by a relative {@value #RELATIVE_TOLERANCE} because
 * floating-point sums depend on the order in which shuffle blocks arrive.
 */
public final class AnswerComparator {
  /** Relative tolerance for floating-point cells. */
  public static final double RELATIVE_TOLERANCE = 1e-9;

  private static final int ROWS_SHOWN = 5;

  private AnswerComparator() {}

  /**
   * Empty when {@code expected} and {@code actual} agree; otherwise a description of the first
   * differences.
   */
  public static Optional<String> difference(Answer expected, Answer actual) {
    if (!expected.columns().equals(actual.columns()) || !expected.types().equals(actual.types())) {
      return Optional.of(
          "columns differ: expected "
              + describeColumns(expected)
              + ", got "
              + describeColumns(actual));
    }
    List<List<Object>> left = sorted(expected);
    List<List<Object>> right = sorted(actual);
    List<String> diffs = new ArrayList<>();
    int common = Math.min(left.size(), right.size());
    int differing = 0;
    for (int i = 0; i < common; i++) {
      if (!rowsEqual(expected, left.get(i), right.get(i))) {
        differing++;
        if (diffs.size() < ROWS_SHOWN) {
          diffs.add(
              "  sorted row "
                  + i
                  + ": expected "
                  + left.get(i)
                  + "\n"
                  + "  "
                  + " ".repeat(String.valueOf(i).length())
                  + "             got      "
                  + right.get(i));
        }
      }
    }
    if (left.size() == right.size() && differing == 0) {
      return Optional.empty();
    }
    StringBuilder sb = new StringBuilder();
    sb.append("expected ").append(left.size()).append(" rows, got ").append(right.size());
    sb.append("; ")
        .append(differing)
        .append(" of the first ")
        .append(common)
        .append(" sorted rows differ");
    for (String d : diffs) {
      sb.append('\n').append(d);
    }
    return Optional.of(sb.toString());
  }

  private static String describeColumns(Answer a) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < a.columns().size(); i++) {
      out.add(a.columns().get(i) + ":" + a.types().get(i));
    }
    return out.toString();
  }

  private static List<List<Object>> sorted(Answer answer) {
    List<List<Object>> rows = new ArrayList<>(answer.rows());
    rows.sort(rowOrder(answer));
    return rows;
  }

  /**
   * Total order on rows: nulls first, strings by text, floating cells rounded to 9 significant
   * digits.
   */
  private static Comparator<List<Object>> rowOrder(Answer answer) {
    return (a, b) -> {
      for (int i = 0; i < a.size(); i++) {
        int c = compareCells(a.get(i), b.get(i), answer.isFloating(i));
        if (c != 0) {
          return c;
        }
      }
      return 0;
    };
  }

  private static int compareCells(Object a, Object b, boolean floating) {
    if (a == null || b == null) {
      return a == null ? (b == null ? 0 : -1) : 1;
    }
    if (floating) {
      return Double.compare(roundForOrder(toDouble(a)), roundForOrder(toDouble(b)));
    }
    return a.toString().compareTo(b.toString());
  }

  private static double roundForOrder(double v) {
    if (v == 0 || Double.isNaN(v) || Double.isInfinite(v)) {
      return v;
    }
    return Double.parseDouble(String.format("%.8e", v));
  }

  private static boolean rowsEqual(Answer answer, List<Object> a, List<Object> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      Object x = a.get(i);
      Object y = b.get(i);
      if (x == null || y == null) {
        if (x != y) {
          return false;
        }
      } else if (answer.isFloating(i)) {
        if (!closeEnough(toDouble(x), toDouble(y))) {
          return false;
        }
      } else if (!Objects.equals(x.toString(), y.toString())) {
        return false;
      }
    }
    return true;
  }

  /** A floating cell; JSON carries NaN and infinities as text. */
  private static double toDouble(Object cell) {
    return cell instanceof Number n ? n.doubleValue() : Double.parseDouble(cell.toString());
  }

  static boolean closeEnough(double x, double y) {
    if (Double.compare(x, y) == 0) {
      return true; // also equal NaNs and infinities
    }
    return Math.abs(x - y) <= RELATIVE_TOLERANCE * Math.max(Math.abs(x), Math.abs(y));
  }
}
