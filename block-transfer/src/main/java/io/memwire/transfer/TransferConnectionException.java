package io.memwire.transfer;

import java.net.InetSocketAddress;

/**
 * The connection to a peer could not be opened or broke: refused, reset, closed by the peer, failed
 * authentication, or a protocol violation. Every read outstanding on that connection fails with
 * this error; a new {@link TransferNode#connection} call opens a fresh connection. One subtype says
 * more: {@link ConnectionReapedException}, a read on a connection the node closed as idle.
 */
public sealed class TransferConnectionException extends TransferException
    permits ConnectionReapedException {
  private static final long serialVersionUID = 1L;

  public TransferConnectionException(String message, InetSocketAddress peer, Throwable cause) {
    super(message + " (peer " + peer + ")", peer, cause);
  }
}
