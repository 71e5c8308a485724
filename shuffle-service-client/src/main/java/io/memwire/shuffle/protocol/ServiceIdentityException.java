package io.memwire.shuffle.protocol;

import java.io.IOException;

/**
 * The process listening on the service's socket runs as a user the executor does not expect of its
 * shuffle service (checked with the socket's peer credentials before anything is sent), so the
 * executor sent it nothing: not its registration, not its application's token.
 */
public final class ServiceIdentityException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String user;

  public ServiceIdentityException(String message, String user) {
    super(message);
    this.user = user;
  }

  /** The user the listening process runs as. */
  public String user() {
    return user;
  }
}
