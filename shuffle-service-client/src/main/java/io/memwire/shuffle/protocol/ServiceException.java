package io.memwire.shuffle.protocol;

import java.io.IOException;

/** The shuffle service refused a request; {@link #code()} is one of the protocol's ERROR codes. */
public final class ServiceException extends IOException {
  private static final long serialVersionUID = 1L;
  private final int code;

  public ServiceException(int code, String message) {
    super(message);
    this.code = code;
  }

  /** The ERROR code ({@code ServiceProtocol.E_*}). */
  public int code() {
    return code;
  }
}
