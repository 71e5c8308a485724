package io.memwire.transfer;

/** A configuration value is missing, malformed or out of range; the message names the key. */
public final class TransferConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public TransferConfigException(String message) {
    super(message);
  }

  public TransferConfigException(String message, Throwable cause) {
    super(message, cause);
  }
}
