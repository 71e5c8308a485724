package io.memwire.transfer.spi;

import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle every provider connection shares: {@link State#OPEN open}, {@link State#FAILING
 * failing} (the first {@link #fail} won, the provider is quiescing), {@link State#FAILED failed}.
 * The first failure wins and is the one every outstanding read sees; later calls only wait for it.
 *
 * <p>The rule lives here, once: on failure the provider first {@linkplain #quiesce quiesces} (stops
 * its device or socket, so nothing writes into any destination again) and hands back every read it
 * still holds; only then does this class fail them, each exactly once. A provider implements {@link
 * #post} and {@link #quiesce} and keeps one invariant: it adds a read to its own structures only
 * under the lock {@code quiesce} drains them with, and only while {@link #isOpen()}; otherwise it
 * {@linkplain #reject rejects} the read at once. Because the state flips before {@code quiesce}
 * runs, no read can slip in behind the drain.
 */
public abstract class AbstractProviderConnection implements ProviderConnection {
  private static final Logger LOG = LoggerFactory.getLogger(AbstractProviderConnection.class);

  /** How long a second caller of {@link #fail} waits for the first one to finish quiescing. */
  private static final long QUIESCE_WAIT_SECONDS = 10;

  /** The states of a provider connection; they only move forward. */
  public enum State {
    OPEN,
    FAILING,
    FAILED
  }

  private final InetSocketAddress peer;
  private final AtomicReference<TransferException> failure = new AtomicReference<>();
  private final CountDownLatch failed = new CountDownLatch(1);

  /** The thread running the first {@link #fail}; a reentrant call from it must not wait. */
  private volatile Thread failing;

  protected AbstractProviderConnection(InetSocketAddress peer) {
    this.peer = peer;
  }

  @Override
  public final InetSocketAddress peer() {
    return peer;
  }

  /** Open until the first {@link #fail} or {@link #close}. */
  @Override
  public boolean isOpen() {
    return failure.get() == null;
  }

  @Override
  public final TransferException failure() {
    return failure.get();
  }

  /** Where in its lifecycle this connection is. */
  public final State state() {
    if (failure.get() == null) {
      return State.OPEN;
    }
    return failed.getCount() == 0 ? State.FAILED : State.FAILING;
  }

  /**
   * Fails the connection with {@code cause} (the first cause wins): the provider stops, then every
   * read it held fails, each once, on the thread that stopped it ({@link #stop}: this thread, or
   * the provider's own thread when it stops there). A later caller waits (bounded) until that has
   * happened, unless it runs on the provider's own thread, which the first caller may be waiting
   * for.
   */
  @Override
  public final void fail(TransferException cause) {
    if (!failure.compareAndSet(null, cause)) {
      if (failing != Thread.currentThread() && !onProviderThread()) {
        awaitFailed();
      }
      return;
    }
    failing = Thread.currentThread();
    CompletableFuture<List<WireRead>> stopped;
    try {
      stopped = stop(cause);
    } catch (RuntimeException e) {
      LOG.warn("quiescing the connection to {} failed; failing its reads anyway", peer, e);
      stopped = CompletableFuture.completedFuture(List.of());
    }
    var unused =
        stopped.whenComplete(
            (held, e) -> {
              if (e != null) {
                LOG.warn("quiescing the connection to {} failed", peer, e);
              }
              try {
                for (WireRead r : held != null ? held : List.<WireRead>of()) {
                  assert !r.isEnded() : "quiesce handed back a read that had already ended: " + r;
                  r.fail(cause);
                }
              } finally {
                failing = null;
                failed.countDown();
              }
            });
  }

  /**
   * Stops the transport, now or later: the future completes with every read still held once nothing
   * writes into their destinations. By default runs {@link #quiesce} on this thread; a provider
   * whose state lives on its own thread stops there instead and completes the future there, so the
   * failing thread never waits for it.
   */
  protected CompletableFuture<List<WireRead>> stop(TransferException cause) {
    List<WireRead> held = new ArrayList<>();
    try {
      quiesce(cause, held);
    } catch (RuntimeException e) {
      LOG.warn("quiescing the connection to {} failed; failing its reads anyway", peer, e);
    }
    return CompletableFuture.completedFuture(held);
  }

  /** Closes the connection; outstanding reads fail with a connection error. */
  @Override
  public final void close() {
    fail(new TransferConnectionException("connection closed locally", peer, null));
  }

  /**
   * Fails reads that never reached the provider's structures (posted after the failure), with the
   * connection's failure.
   */
  protected final void reject(List<WireRead> reads) {
    TransferException cause = failure.get();
    if (cause == null) {
      cause = new TransferConnectionException("connection is not open", peer, null);
    }
    for (WireRead r : reads) {
      r.fail(cause);
    }
  }

  /** Single-read form of {@link #reject(List)}. */
  protected final void reject(WireRead read) {
    reject(List.of(read));
  }

  /**
   * Stops the transport so that nothing writes into any held read's destination after this returns,
   * and adds every read still held (submitted, in flight, waiting) to {@code held}. Runs once, on
   * the thread that failed the connection first; may block (bounded) while the provider's own
   * thread stops. Must not complete or fail reads itself.
   */
  protected abstract void quiesce(TransferException cause, List<WireRead> held);

  /**
   * True on a thread the provider itself runs (an event loop, a completion thread): a second {@link
   * #fail} there returns at once instead of waiting for the first.
   */
  protected boolean onProviderThread() {
    return false;
  }

  private void awaitFailed() {
    try {
      if (!failed.await(QUIESCE_WAIT_SECONDS, TimeUnit.SECONDS)) {
        LOG.warn("connection to {} did not finish failing within {} s", peer, QUIESCE_WAIT_SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
