package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.function.Executable;

/** Assertions on configuration errors by their typed problem and key (shared by modules' tests). */
public final class ConfigErrors {
  private ConfigErrors() {}

  /**
   * Runs {@code action}, which must throw a {@link TransferConfigException} for {@code problem} at
   * {@code key} whose message names that key (what a user reads); returns it.
   */
  public static TransferConfigException assertConfigError(
      TransferConfigException.Problem problem, String key, Executable action) {
    TransferConfigException e = assertThrows(TransferConfigException.class, action);
    assertEquals(problem, e.problem(), e.getMessage());
    assertEquals(key, e.key(), e.getMessage());
    assertTrue(e.getMessage().contains(key), "the message names the key: " + e.getMessage());
    return e;
  }
}
