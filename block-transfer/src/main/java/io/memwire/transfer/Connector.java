package io.memwire.transfer;

import java.net.InetSocketAddress;

/**
 * What a reader needs of a {@link TransferNode} to reach peers, and nothing else: the provider it
 * reads with and the cached connection to a peer. Readers (Flight's batch puller, the shuffle
 * reader's {@code ReadServices}) take a {@code Connector}, not the node.
 */
public interface Connector {
  /** The provider this node's connections use: a peer's region must be of the same kind. */
  ProviderKind provider();

  /**
   * The connection to {@code peer}, opened on first use and reused; a failed, closed or reaped one
   * is replaced. Blocks at most the connect timeout. After an attempt to open a connection failed,
   * attempts within {@link TransferConfig#peerBackoff()} fail at once, naming that failure. Handing
   * a connection out counts as using it: the idle reaper leaves it open for at least {@link
   * TransferConfig#connectionIdleTimeout()} after this returns, and while any read is on it. Take
   * it here for each batch rather than keeping it across idle periods (see {@link
   * ConnectionReapedException}).
   *
   * @throws TransferConnectionException when the peer cannot be reached, refuses, or is backed off
   *     after such a failure
   * @throws TransferTimeoutException when connecting takes longer than the connect timeout
   */
  Connection connection(InetSocketAddress peer) throws TransferException;
}
