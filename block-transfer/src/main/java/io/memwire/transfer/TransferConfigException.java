package io.memwire.transfer;

/**
 * A configuration value is missing, malformed or out of range, or the environment cannot run what
 * it asks for; the message names the key. {@link #problem()} and {@link #key()} say the same for
 * code (and tests) that must tell the cases apart.
 */
public final class TransferConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** What is wrong with the configuration. */
  public enum Problem {
    /** A key under a known prefix that no setting declares (likely a typo). */
    UNKNOWN_KEY,
    /** A key given without a value. */
    MISSING,
    /** A value that does not parse as the setting's type. */
    MALFORMED,
    /** A value outside the setting's declared range. */
    OUT_OF_RANGE,
    /** Values that are each valid but do not fit together, or that this machine cannot honour. */
    UNUSABLE
  }

  private final Problem problem;
  private final String key;

  /** A configuration that cannot be used, for a reason the message gives. */
  public TransferConfigException(String message) {
    this(Problem.UNUSABLE, null, message, null);
  }

  /** A configuration that cannot be used, for a reason the message and cause give. */
  public TransferConfigException(String message, Throwable cause) {
    this(Problem.UNUSABLE, null, message, cause);
  }

  /** {@code problem} with {@code key} (the full key, prefix included; null when none applies). */
  public TransferConfigException(Problem problem, String key, String message) {
    this(problem, key, message, null);
  }

  private TransferConfigException(Problem problem, String key, String message, Throwable cause) {
    super(message, cause);
    this.problem = problem;
    this.key = key;
  }

  /** What is wrong. */
  public Problem problem() {
    return problem;
  }

  /** The full key at fault, or null when the problem is not one key's. */
  public String key() {
    return key;
  }
}
