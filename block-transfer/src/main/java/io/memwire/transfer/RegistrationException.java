package io.memwire.transfer;

/**
 * Memory could not be registered: the registration budget is exhausted, the buffer is not suitable
 * (heap, read-only where write is needed), or the provider refused it.
 */
public final class RegistrationException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RegistrationException(String message) {
    super(message);
  }

  public RegistrationException(String message, Throwable cause) {
    super(message, cause);
  }
}
