package io.memwire.transfer;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A read was issued on a {@link Connection} the node had already closed because it stayed idle past
 * {@link TransferConfig#connectionIdleTimeout()}. Nothing of the read reached the network, so it is
 * always safe to retry: take the connection again with {@link TransferNode#connection} (which opens
 * a fresh one) and read there. It happens only to a caller that kept a connection without reading
 * on it, and without asking the node for it again, for longer than the idle timeout; a connection
 * is never closed as idle while it has reads queued or in flight, nor within the idle timeout after
 * {@link TransferNode#connection} handed it out.
 */
public final class ConnectionReapedException extends TransferConnectionException {
  private static final long serialVersionUID = 1L;

  ConnectionReapedException(InetSocketAddress peer, Duration idleTimeout) {
    super(
        "the connection was closed after "
            + idleTimeout.toMillis()
            + " ms without reads (connectionIdleTimeout); nothing was sent: take a fresh one with "
            + "TransferNode.connection(peer) and read again",
        peer,
        null);
  }
}
