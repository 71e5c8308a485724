package io.memwire.shuffle.service;

import io.memwire.shuffle.service.protocol.ServiceProtocol;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The service's resolve port ({@code resolvePort}): reducers on any node send one RESOLVE frame per
 * TCP connection and get one answer ({@link PointerResolver}). Opened once recovery is done, so a
 * reader that comes too early is refused at connect and tries again. Bounded: a frame must arrive
 * and its answer be taken within {@code frameTimeout}, at most {@value #WORKERS} connections are
 * served at once and {@value #QUEUED} wait; more are closed at once.
 *
 * <p>Threads (daemons, joined by {@link #close}): {@code memwire-shuffle-service-resolve} accepts;
 * {@code memwire-shuffle-service-resolve-N} serve a connection each.
 */
final class ResolveListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ResolveListener.class);
  private static final int WORKERS = 2;
  private static final int QUEUED = 64;

  private final ServerSocket server;
  private final PointerResolver resolver;
  private final int timeoutMillis;
  private final ThreadPoolExecutor workers;
  private final Thread acceptor;

  private ResolveListener(ServerSocket server, PointerResolver resolver, Duration timeout) {
    this.server = server;
    this.resolver = resolver;
    this.timeoutMillis = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
    AtomicInteger ids = new AtomicInteger();
    this.workers =
        new ThreadPoolExecutor(
            WORKERS,
            WORKERS,
            0,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUED),
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-service-resolve-" + ids.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.acceptor = new Thread(this::accept, "memwire-shuffle-service-resolve");
    this.acceptor.setDaemon(true);
  }

  /** Binds {@code address:port} (0: any free port) and starts accepting. */
  static ResolveListener start(
      InetAddress address, int port, PointerResolver resolver, Duration timeout)
      throws IOException {
    ServerSocket s = new ServerSocket();
    try {
      s.setReuseAddress(true); // a restarted service takes the same port back at once
      s.bind(new InetSocketAddress(address, port), 64);
    } catch (IOException e) {
      s.close();
      throw new IOException(
          ServiceSettings.PREFIX
              + ServiceSettings.RESOLVE_PORT.name()
              + "="
              + port
              + ": cannot listen on "
              + address.getHostAddress()
              + ": "
              + e.getMessage(),
          e);
    }
    ResolveListener l = new ResolveListener(s, resolver, timeout);
    l.acceptor.start();
    LOG.info(
        "shuffle service resolve port {}:{}: readers re-resolve pointers of {} directory chunks "
            + "of the previous run",
        address.getHostAddress(),
        s.getLocalPort(),
        resolver.size());
    return l;
  }

  /** The port bound. */
  int port() {
    return server.getLocalPort();
  }

  private void accept() {
    while (!server.isClosed()) {
      Socket c;
      try {
        c = server.accept();
      } catch (IOException e) {
        if (!server.isClosed()) {
          LOG.warn("shuffle service resolve port: accept failed: {}", e.toString());
        }
        continue;
      }
      try {
        workers.execute(() -> serve(c));
      } catch (RejectedExecutionException e) {
        closeQuietly(c); // too many at once: the reader tries again
      }
    }
  }

  private void serve(Socket c) {
    try (c) {
      c.setSoTimeout(timeoutMillis);
      DataInputStream in = new DataInputStream(c.getInputStream());
      int length = ServiceProtocol.checkLength(in.readInt());
      byte type = in.readByte();
      byte[] body = new byte[length - 1];
      in.readFully(body);
      if (type != ServiceProtocol.RESOLVE) {
        return; // not this port's protocol: closed without an answer
      }
      ServiceProtocol.Out answer =
          resolver.answer(
              new ServiceProtocol.In(type, ByteBuffer.wrap(body)), ByteBuffer.wrap(body));
      ByteBuffer f = answer.frame();
      byte[] out = new byte[f.remaining()];
      f.get(out);
      OutputStream os = c.getOutputStream();
      os.write(out);
      os.flush();
    } catch (IOException | RuntimeException e) {
      LOG.debug("shuffle service resolve port: connection dropped: {}", e.toString());
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing only
    }
  }

  /** Stops accepting and joins the threads (a connection being served ends within its timeout). */
  @Override
  public void close() throws InterruptedException {
    try {
      server.close();
    } catch (IOException ignored) {
      // closing only
    }
    acceptor.join(10_000);
    workers.shutdownNow();
    workers.awaitTermination(10, TimeUnit.SECONDS);
  }
}
