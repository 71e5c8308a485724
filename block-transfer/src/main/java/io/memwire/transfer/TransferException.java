package io.memwire.transfer;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Base type of every error a one-sided read can end with. Each subtype names one cause a caller
 * reacts to differently: a bad or dead remote region ({@link RemoteAccessException}), a broken
 * connection ({@link TransferConnectionException}) or an expired deadline ({@link
 * TransferTimeoutException}).
 *
 * <p>The message always names the peer and, where one is involved, the region descriptor.
 */
public abstract class TransferException extends IOException {
  private static final long serialVersionUID = 1L;

  private final InetSocketAddress peer;

  protected TransferException(String message, InetSocketAddress peer, Throwable cause) {
    super(message, cause);
    this.peer = peer;
  }

  /** The remote node involved, or null when the error is local. */
  public InetSocketAddress peer() {
    return peer;
  }
}
