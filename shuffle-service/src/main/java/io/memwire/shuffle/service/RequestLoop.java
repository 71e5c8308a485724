package io.memwire.shuffle.service;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP listener that answers one request per connection on one selector thread that never waits
 * for a client: the service's HTTP endpoint and its resolve port, which anyone who reaches the port
 * can connect to. A request must arrive within the timeout and fit in {@code maxRequestBytes}; its
 * answer is written without blocking, within the timeout again, and the connection closed after it.
 * At most {@link #MAX_CONNECTIONS} are open: one more closes the oldest not writing an answer, so
 * silent, slow or lingering clients cannot keep others out. (A thread per connection, or a pool of
 * them reading with a socket timeout, is held by any client that sends a byte now and then.)
 *
 * <p>Its thread is a daemon named by the caller; {@link #close} stops and joins it and frees the
 * port.
 */
final class RequestLoop implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RequestLoop.class);

  /** Most connections open at once. */
  static final int MAX_CONNECTIONS = 64;

  private static final long TICK_MS = 250;
  private static final int FIRST_BUFFER = 1024;

  /** What is spoken on the port: where a request ends, and its answer. */
  interface Protocol {
    /**
     * Length of the complete request at the start of {@code in} (its bytes [0, position) are what
     * arrived so far), or -1 while more must come.
     *
     * @throws IOException when these bytes cannot start a request: closed without an answer
     */
    int requestLength(ByteBuffer in) throws IOException;

    /**
     * The whole answer to the request in {@code in}'s bytes [0, length), or null to close without
     * one. Runs on the loop's thread, so it must not block.
     */
    ByteBuffer answer(ByteBuffer in, int length);

    /**
     * The answer to a request longer than {@code maxRequestBytes}, or null to close without one.
     */
    ByteBuffer tooLarge();
  }

  /** One client connection; loop-confined. */
  private static final class Connection {
    final SocketChannel channel;
    final SelectionKey key;
    ByteBuffer in;
    ByteBuffer out;
    boolean draining;
    long deadlineNanos;

    Connection(SocketChannel channel, SelectionKey key, int firstBuffer, long deadlineNanos) {
      this.channel = channel;
      this.key = key;
      this.in = ByteBuffer.allocate(firstBuffer);
      this.deadlineNanos = deadlineNanos;
    }
  }

  private final Selector selector;
  private final ServerSocketChannel server;
  private final Protocol protocol;
  private final int maxRequestBytes;
  private final long timeoutNanos;
  private final Thread thread;
  private volatile boolean running = true;

  /** Open connections, oldest first. Loop-confined. */
  private final LinkedHashSet<Connection> open = new LinkedHashSet<>();

  /** Where bytes sent after a request go. Loop-confined. */
  private final ByteBuffer discard = ByteBuffer.allocate(1024);

  private boolean acceptPaused;
  private boolean answerFailureLogged;

  private RequestLoop(
      String name,
      Selector selector,
      ServerSocketChannel server,
      int maxRequestBytes,
      Duration timeout,
      Protocol protocol) {
    this.selector = selector;
    this.server = server;
    this.protocol = protocol;
    this.maxRequestBytes = maxRequestBytes;
    this.timeoutNanos = timeout.toNanos();
    this.thread = new Thread(this::run, name);
    this.thread.setDaemon(true);
  }

  /**
   * Binds {@code address} (port 0: a free port) and starts serving on a daemon thread {@code name}.
   *
   * @param timeout time for a request to arrive, and again for its answer to be taken
   * @throws IOException when the address cannot be bound
   */
  static RequestLoop start(
      String name,
      InetSocketAddress address,
      int maxRequestBytes,
      Duration timeout,
      Protocol protocol)
      throws IOException {
    Selector selector = Selector.open();
    ServerSocketChannel server = null;
    try {
      server = ServerSocketChannel.open();
      server.bind(address, MAX_CONNECTIONS);
      server.configureBlocking(false);
      server.register(selector, SelectionKey.OP_ACCEPT);
    } catch (IOException | RuntimeException e) {
      if (server != null) {
        server.close();
      }
      selector.close();
      throw e;
    }
    RequestLoop loop = new RequestLoop(name, selector, server, maxRequestBytes, timeout, protocol);
    loop.thread.start();
    return loop;
  }

  /** The bound port. */
  int port() {
    return ((InetSocketAddress) server.socket().getLocalSocketAddress()).getPort();
  }

  private void run() {
    try {
      while (running) {
        selector.select(TICK_MS);
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey key = it.next();
          it.remove();
          if (!key.isValid()) {
            continue;
          }
          if (key.isAcceptable()) {
            accept();
          } else {
            Connection c = (Connection) key.attachment();
            try {
              if (key.isReadable()) {
                read(c);
              } else if (key.isWritable()) {
                write(c);
              }
            } catch (IOException e) {
              close(c);
            }
          }
        }
        tick(System.nanoTime());
      }
    } catch (IOException | RuntimeException e) {
      LOG.error("{} stopped", thread.getName(), e);
    } finally {
      for (Connection c : open.toArray(new Connection[0])) {
        close(c);
      }
      closeQuietly(server);
      closeQuietly(selector);
    }
  }

  private void accept() throws IOException {
    while (true) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (IOException e) {
        // Out of descriptors, most likely: stop accepting until the next tick, keep serving.
        LOG.debug("{} cannot accept: {}", thread.getName(), e.toString());
        server.keyFor(selector).interestOps(0);
        acceptPaused = true;
        return;
      }
      if (ch == null) {
        return;
      }
      if (open.size() >= MAX_CONNECTIONS) {
        evictOne();
      }
      try {
        ch.configureBlocking(false);
        SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
        Connection c =
            new Connection(
                ch, key, Math.min(FIRST_BUFFER, maxRequestBytes), System.nanoTime() + timeoutNanos);
        key.attach(c);
        open.add(c);
      } catch (IOException e) { // the peer is gone already: only this connection
        LOG.debug("{} dropped a connection: {}", thread.getName(), e.toString());
        closeQuietly(ch);
      }
    }
  }

  /**
   * Makes room for a new connection: closes the oldest one not writing an answer (still waiting for
   * its request, or done and waiting for the client's close), else the oldest one.
   */
  private void evictOne() {
    for (Connection c : open) {
      if (c.out == null || c.draining) {
        close(c);
        return;
      }
    }
    close(open.iterator().next());
  }

  private void read(Connection c) throws IOException {
    if (c.draining) {
      while (true) {
        int n = c.channel.read(discard.clear());
        if (n < 0) {
          close(c);
          return;
        }
        if (n == 0) {
          return;
        }
      }
    }
    if (c.out != null) {
      return; // the request is in; more bytes wait until the answer is out
    }
    while (true) {
      int n = c.channel.read(c.in);
      if (n < 0) {
        close(c);
        return;
      }
      int length = protocol.requestLength(c.in);
      if (length >= 0) {
        answer(c, length);
        return;
      }
      if (c.in.hasRemaining()) {
        if (n == 0) {
          return;
        }
        continue;
      }
      if (c.in.capacity() >= maxRequestBytes) {
        respond(c, protocol.tooLarge());
        return;
      }
      ByteBuffer bigger =
          ByteBuffer.allocate((int) Math.min(maxRequestBytes, 2L * c.in.capacity()));
      c.in = bigger.put(c.in.flip());
    }
  }

  private void answer(Connection c, int length) throws IOException {
    ByteBuffer out;
    try {
      out = protocol.answer(c.in, length);
    } catch (RuntimeException e) {
      if (!answerFailureLogged) {
        answerFailureLogged = true;
        LOG.warn("{} failed to answer (further failures at DEBUG)", thread.getName(), e);
      } else {
        LOG.debug("{} failed to answer", thread.getName(), e);
      }
      out = null;
    }
    respond(c, out);
  }

  /** Starts writing {@code out}; null closes the connection without an answer. */
  private void respond(Connection c, ByteBuffer out) throws IOException {
    if (out == null) {
      close(c);
      return;
    }
    c.out = out;
    c.deadlineNanos = System.nanoTime() + timeoutNanos;
    c.key.interestOps(SelectionKey.OP_WRITE);
    write(c);
  }

  private void write(Connection c) throws IOException {
    c.channel.write(c.out);
    if (c.out.hasRemaining()) {
      return;
    }
    // Closing with unread request bytes would reset the connection and could cost the client the
    // answer: send FIN, then read what is left until the client closes (or the deadline).
    c.channel.shutdownOutput();
    c.draining = true;
    c.key.interestOps(SelectionKey.OP_READ);
    read(c);
  }

  private void tick(long now) {
    if (acceptPaused) {
      acceptPaused = false;
      server.keyFor(selector).interestOps(SelectionKey.OP_ACCEPT);
    }
    for (Connection c : open.toArray(new Connection[0])) {
      if (now - c.deadlineNanos > 0) {
        close(c);
      }
    }
  }

  private void close(Connection c) {
    open.remove(c);
    c.key.cancel();
    closeQuietly(c.channel);
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      LOG.debug("closing {}", c, e);
    }
  }

  /** Stops serving: the thread closes every connection and the port, and is joined. */
  @Override
  public void close() throws InterruptedException {
    running = false;
    selector.wakeup();
    thread.join(TimeUnit.SECONDS.toMillis(10));
  }
}
