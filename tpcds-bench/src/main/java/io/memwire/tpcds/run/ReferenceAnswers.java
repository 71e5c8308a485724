package io.memwire.tpcds.run;

import io.memwire.tpcds.verify.Answer;
import io.memwire.tpcds.verify.AnswerComparator;
import io.memwire.tpcds.verify.AnswerMismatchException;
import io.memwire.tpcds.worker.WorkerMessages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every answer checked against the reference configuration's: the reference's answer to each query
 * is kept (and written to {@code answers/<query>.json}), every other configuration's must equal it.
 */
final class ReferenceAnswers {
  private static final Logger LOG = LoggerFactory.getLogger(ReferenceAnswers.class);

  private final String referenceConfig;
  private final Path runDir;
  private final Map<String, Answer> reference = new HashMap<>();

  ReferenceAnswers(String referenceConfig, Path runDir) {
    this.referenceConfig = referenceConfig;
    this.runDir = runDir;
  }

  /**
   * Keeps the reference configuration's first answer to {@code query}; checks any other against it.
   *
   * @throws AnswerMismatchException when {@code answer} differs from the reference's
   */
  void verify(String query, String config, Answer answer) throws IOException {
    Answer expected = reference.get(query);
    if (expected == null) {
      // Round 0 runs the reference configuration first, so its answer is the first one seen.
      if (!config.equals(referenceConfig)) {
        throw new IllegalStateException("reference configuration did not run " + query + " first");
      }
      reference.put(query, answer);
      Path file = runDir.resolve("answers").resolve(query + ".json");
      Files.createDirectories(file.getParent());
      WorkerMessages.JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), answer);
      return;
    }
    Optional<String> difference = AnswerComparator.difference(expected, answer);
    if (difference.isPresent()) {
      String message =
          "ANSWER MISMATCH in "
              + query
              + ": configuration '"
              + config
              + "' differs from reference '"
              + referenceConfig
              + "': "
              + difference.get();
      LOG.error(message);
      throw new AnswerMismatchException(message);
    }
  }
}
