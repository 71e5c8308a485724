package io.memwire.transfer.spi;

import io.memwire.transfer.TransferException;
import java.net.InetSocketAddress;
import java.util.List;

/**
 * One provider connection (a TCP socket, a verbs queue pair). Flow control happens above it: a
 * provider may assume the reads it is given fit its limits. Providers extend {@link
 * AbstractProviderConnection}, which owns the lifecycle (open, failing, failed) and the rule that
 * outstanding reads fail once, after the provider has quiesced.
 */
public interface ProviderConnection {

  InetSocketAddress peer();

  /**
   * Posts a batch of reads, in order, as one unit where the transport allows (one chain of work
   * requests, one write). Never blocks on the network. Each read ends with exactly one call of
   * {@link WireRead#complete()} or {@link WireRead#fail}; after that the provider never touches its
   * destination again. Reads posted after the connection failed fail at once.
   */
  void post(List<WireRead> reads);

  /**
   * Fails the connection: every outstanding read fails with {@code cause} (after the provider has
   * stopped writing into its destination) and the connection closes.
   */
  void fail(TransferException cause);

  boolean isOpen();

  /**
   * Whether the peer reads the memory of this connection's reads in the order they were posted,
   * each read's bytes all fetched before the next read touches memory (the tcp responder answers in
   * request order and copies each response into the socket in that order). {@link
   * io.memwire.transfer.Connection#read(List, io.memwire.transfer.ReadRequest)} relies on it: when
   * true the {@code after} read is posted right behind the body reads; when false it is posted only
   * once every body read has completed, which costs one more round trip.
   */
  boolean servesInPostOrder();

  /** The failure that ended this connection (the first one), or null while it is open. */
  TransferException failure();

  /** Closes the connection; outstanding reads fail with a connection error. */
  void close();

  /**
   * What the provider can tell about a read that did not complete in time, to append to the
   * timeout's message ({@code "; "} and a sentence, e.g. the fabric cause its NIC counters show),
   * or "" when it knows nothing more. Called once, on the timer's thread, before the connection
   * fails; must not block on the network.
   */
  default String stallDetail() {
    return "";
  }
}
