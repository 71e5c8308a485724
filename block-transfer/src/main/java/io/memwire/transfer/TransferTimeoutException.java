package io.memwire.transfer;

import java.net.InetSocketAddress;

/**
 * A connect or a read did not finish within its configured timeout. A read timeout also closes the
 * connection it was on (as a queue pair in error would), so no late bytes can land in a buffer that
 * was already handed back.
 */
public final class TransferTimeoutException extends TransferException {
  private static final long serialVersionUID = 1L;

  public TransferTimeoutException(String message, InetSocketAddress peer) {
    super(message + " (peer " + peer + ")", peer, null);
  }
}
