package io.memwire.shuffle.service;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP/1.x server for the service's few GET endpoints, on one selector thread that never
 * waits for a client. A request's head must arrive within {@link #TIMEOUT_MS} and fit in {@link
 * #MAX_HEAD} bytes; the response is written without blocking, within the same time again, and the
 * connection closed after it ({@code Connection: close}). At most {@link #MAX_CONNECTIONS} are
 * open: one more closes the oldest not writing a response, so silent, slow or lingering clients
 * cannot keep a health probe out. (The JDK's {@code com.sun.net.httpserver} reads each request head
 * on a handler thread, so as many silent connections as it has handler threads stall its endpoint.)
 *
 * <p>Its thread is a daemon, {@code memwire-shuffle-service-http}; {@link #close} stops and joins
 * it and frees the port.
 */
final class HttpLoop implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HttpLoop.class);

  /** Most bytes of a request line and headers. */
  static final int MAX_HEAD = 8192;

  /** Time for a request's head to arrive, and again for its response to be taken. */
  static final long TIMEOUT_MS = 5000;

  /** Most connections open at once. */
  static final int MAX_CONNECTIONS = 64;

  private static final long TICK_MS = 250;

  /** A request: its method and path (without the query). */
  record Request(String method, String path) {}

  /** A response: status, content type and body. */
  record Response(int status, String contentType, byte[] body) {}

  /** Answers one request; runs on the loop's thread, so it must not block. */
  @FunctionalInterface
  interface Handler {
    Response handle(Request r) throws Exception;
  }

  /** One client connection; loop-confined. */
  private static final class Connection {
    final SocketChannel channel;
    final SelectionKey key;
    final ByteBuffer in = ByteBuffer.allocate(MAX_HEAD);
    ByteBuffer out;
    boolean draining;
    long deadlineNanos;

    Connection(SocketChannel channel, SelectionKey key, long deadlineNanos) {
      this.channel = channel;
      this.key = key;
      this.deadlineNanos = deadlineNanos;
    }
  }

  private final Selector selector;
  private final ServerSocketChannel server;
  private final Handler handler;
  private final Thread thread;
  private volatile boolean running = true;

  /** Open connections, oldest first. Loop-confined. */
  private final LinkedHashSet<Connection> open = new LinkedHashSet<>();

  private boolean handlerFailureLogged;
  private boolean acceptPaused;

  private HttpLoop(Selector selector, ServerSocketChannel server, Handler handler) {
    this.selector = selector;
    this.server = server;
    this.handler = handler;
    this.thread = new Thread(this::run, "memwire-shuffle-service-http");
    this.thread.setDaemon(true);
  }

  /**
   * Binds {@code host:port} (0: a free port) and starts serving.
   *
   * @throws IOException when the address cannot be bound
   */
  static HttpLoop start(String host, int port, Handler handler) throws IOException {
    Selector selector = Selector.open();
    ServerSocketChannel server = null;
    try {
      server = ServerSocketChannel.open();
      server.bind(new InetSocketAddress(host, port), MAX_CONNECTIONS);
      server.configureBlocking(false);
      server.register(selector, SelectionKey.OP_ACCEPT);
    } catch (IOException | RuntimeException e) {
      if (server != null) {
        server.close();
      }
      selector.close();
      throw e;
    }
    HttpLoop loop = new HttpLoop(selector, server, handler);
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
        expire(System.nanoTime());
      }
    } catch (IOException | RuntimeException e) {
      LOG.error("the HTTP endpoint stopped", e);
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
        LOG.debug("the HTTP endpoint cannot accept: {}", e.toString());
        serverKey().interestOps(0);
        acceptPaused = true;
        return;
      }
      if (ch == null) {
        return;
      }
      if (open.size() >= MAX_CONNECTIONS) {
        evictOne();
      }
      ch.configureBlocking(false);
      SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
      Connection c = new Connection(ch, key, System.nanoTime() + ms(TIMEOUT_MS));
      key.attach(c);
      open.add(c);
    }
  }

  /**
   * Makes room for a new connection: closes the oldest one not writing a response (still waiting
   * for its request, or done and waiting for the client's close), else the oldest one.
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

  private SelectionKey serverKey() {
    return server.keyFor(selector);
  }

  private void read(Connection c) throws IOException {
    if (c.draining) {
      ByteBuffer discard = ByteBuffer.allocate(1024);
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
      return; // the request is in; more bytes wait until the response is out
    }
    if (c.channel.read(c.in) < 0) {
      close(c);
      return;
    }
    int end = endOfHead(c.in);
    if (end < 0) {
      if (!c.in.hasRemaining()) {
        respond(
            c,
            new Response(431, "text/plain; charset=utf-8", text("request head too large")),
            false);
      }
      return;
    }
    answer(c, end);
  }

  /** Index after the blank line that ends the head in {@code in}'s written bytes, or -1. */
  private static int endOfHead(ByteBuffer in) {
    int n = in.position();
    for (int i = 0; i < n; i++) {
      if (in.get(i) != '\n') {
        continue;
      }
      if (i + 1 < n && in.get(i + 1) == '\n') {
        return i + 2;
      }
      if (i + 2 < n && in.get(i + 1) == '\r' && in.get(i + 2) == '\n') {
        return i + 3;
      }
    }
    return -1;
  }

  /** Answers the request whose head ends at {@code end} of the connection's input. */
  private void answer(Connection c, int end) throws IOException {
    String head = new String(c.in.array(), 0, end, StandardCharsets.ISO_8859_1);
    String[] parts = head.substring(0, head.indexOf('\n')).strip().split(" ", -1);
    if (parts.length != 3 || !parts[2].startsWith("HTTP/1.") || !parts[1].startsWith("/")) {
      respond(c, new Response(400, "text/plain; charset=utf-8", text("bad request line")), false);
    } else if (!parts[0].equals("GET") && !parts[0].equals("HEAD")) {
      respond(c, new Response(405, "text/plain; charset=utf-8", text("only GET and HEAD")), false);
    } else {
      int query = parts[1].indexOf('?');
      String path = query < 0 ? parts[1] : parts[1].substring(0, query);
      respond(c, handle(new Request(parts[0], path)), parts[0].equals("HEAD"));
    }
  }

  private Response handle(Request r) {
    String path = r.path();
    try {
      return handler.handle(r);
    } catch (Exception e) {
      if (!handlerFailureLogged) {
        handlerFailureLogged = true;
        LOG.warn("the HTTP endpoint failed to answer {} (further failures at DEBUG)", path, e);
      } else {
        LOG.debug("the HTTP endpoint failed to answer {}", path, e);
      }
      return new Response(500, "text/plain; charset=utf-8", text("internal error"));
    }
  }

  /** Queues {@code r} (its head only when {@code headOnly}: a HEAD request) and starts writing. */
  private void respond(Connection c, Response r, boolean headOnly) throws IOException {
    byte[] body = r.body();
    String head =
        "HTTP/1.1 "
            + r.status()
            + " "
            + reason(r.status())
            + "\r\nContent-Type: "
            + r.contentType()
            + "\r\nContent-Length: "
            + body.length
            + (r.status() == 405 ? "\r\nAllow: GET, HEAD" : "")
            + "\r\nConnection: close\r\n\r\n";
    byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer out = ByteBuffer.allocate(h.length + (headOnly ? 0 : body.length));
    out.put(h);
    if (!headOnly) {
      out.put(body);
    }
    c.out = out.flip();
    c.deadlineNanos = System.nanoTime() + ms(TIMEOUT_MS);
    c.key.interestOps(SelectionKey.OP_WRITE);
    write(c);
  }

  private void write(Connection c) throws IOException {
    c.channel.write(c.out);
    if (c.out.hasRemaining()) {
      return;
    }
    // Closing with unread request bytes would reset the connection and could cost the client the
    // response: send FIN, then read what is left until the client closes (or the deadline).
    c.channel.shutdownOutput();
    c.draining = true;
    c.key.interestOps(SelectionKey.OP_READ);
    read(c);
  }

  private void expire(long now) {
    if (acceptPaused) {
      acceptPaused = false;
      serverKey().interestOps(SelectionKey.OP_ACCEPT);
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

  private static String reason(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 400:
        return "Bad Request";
      case 404:
        return "Not Found";
      case 405:
        return "Method Not Allowed";
      case 431:
        return "Request Header Fields Too Large";
      case 503:
        return "Service Unavailable";
      default:
        return "Internal Server Error";
    }
  }

  static byte[] text(String s) {
    return (s + "\n").getBytes(StandardCharsets.UTF_8);
  }

  private static long ms(long millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis);
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
