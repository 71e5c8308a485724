package io.memwire.tpcds.verify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.tpcds.worker.WorkerMessages;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class AnswerComparatorTest {
  private static Answer answer(List<Object>... rows) {
    return new Answer(
        List.of("k", "amount", "ratio"),
        List.of("string", "decimal(17,2)", "double"),
        List.of(rows));
  }

  private static List<Object> row(Object... cells) {
    return Arrays.asList(cells);
  }

  @Test
  void orderDoesNotMatter() {
    Answer a = answer(row("a", "1.50", 0.5), row("b", null, 2.0));
    Answer b = answer(row("b", null, 2.0), row("a", "1.50", 0.5));
    assertTrue(AnswerComparator.difference(a, b).isEmpty());
  }

  @Test
  void decimalsMustMatchExactlyIncludingScale() {
    Answer a = answer(row("a", "1.50", 0.5));
    assertTrue(AnswerComparator.difference(a, answer(row("a", "1.51", 0.5))).isPresent());
    assertTrue(AnswerComparator.difference(a, answer(row("a", "1.5", 0.5))).isPresent());
  }

  @Test
  void doublesMayDifferInTheLastBitsOnly() {
    Answer a = answer(row("a", "1.50", 0.1 + 0.2));
    assertTrue(AnswerComparator.difference(a, answer(row("a", "1.50", 0.3))).isEmpty());
    assertTrue(AnswerComparator.difference(a, answer(row("a", "1.50", 0.3001))).isPresent());
  }

  @Test
  void aMissingRowIsReportedWithCounts() {
    Answer a = answer(row("a", "1.00", 1.0), row("a", "1.00", 1.0), row("b", "2.00", 2.0));
    Answer b = answer(row("a", "1.00", 1.0), row("b", "2.00", 2.0));
    String diff = AnswerComparator.difference(a, b).orElseThrow();
    assertTrue(diff.startsWith("expected 3 rows, got 2"), diff);
  }

  @Test
  void nullIsNotEqualToAValue() {
    assertTrue(
        AnswerComparator.difference(answer(row("a", null, 1.0)), answer(row("a", "0.00", 1.0)))
            .isPresent());
  }

  @Test
  void differentColumnsAreReported() {
    Answer a = answer(row("a", "1.00", 1.0));
    Answer b = new Answer(List.of("k", "amount", "other"), a.types(), a.rows());
    assertTrue(AnswerComparator.difference(a, b).orElseThrow().startsWith("columns differ"));
  }

  @Test
  void survivesTheJsonRoundTripWithExactDecimalsAndSpecialDoubles() throws Exception {
    Answer a =
        answer(
            row("a", "12345678901234.57", Double.NaN),
            row("b", "0.10", 1e300),
            row(null, null, null));
    Answer back =
        WorkerMessages.JSON.readValue(WorkerMessages.JSON.writeValueAsString(a), Answer.class);
    assertTrue(
        AnswerComparator.difference(a, back).isEmpty(),
        () -> AnswerComparator.difference(a, back).get());
    assertEquals("12345678901234.57", back.rows().get(0).get(1));
  }
}
