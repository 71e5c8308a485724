package io.memwire.flight.wire;

/** A data-plane message that cannot be decoded: wrong magic, version, or truncated. */
public final class WireException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public WireException(String message) {
    super(message);
  }
}
