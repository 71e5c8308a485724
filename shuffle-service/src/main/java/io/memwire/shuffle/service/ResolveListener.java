package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceProtocol;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The service's resolve port ({@code resolvePort}): reducers on any node send one RESOLVE frame per
 * TCP connection and get one answer ({@link PointerResolver}). Opened once recovery is done, so a
 * reader that comes too early is refused at connect and tries again. On a {@link RequestLoop}: a
 * frame must arrive within {@code frameTimeout}, and its answer be taken within it again; a frame
 * of another type is closed without an answer.
 *
 * <p>Thread (a daemon, joined by {@link #close}): {@code memwire-shuffle-service-resolve}.
 */
final class ResolveListener implements AutoCloseable, RequestLoop.Protocol {
  private static final Logger LOG = LoggerFactory.getLogger(ResolveListener.class);

  private final PointerResolver resolver;
  private RequestLoop loop;

  private ResolveListener(PointerResolver resolver) {
    this.resolver = resolver;
  }

  /** Binds {@code address:port} (0: any free port) and starts accepting. */
  static ResolveListener start(
      InetAddress address, int port, PointerResolver resolver, Duration timeout)
      throws IOException {
    ResolveListener l = new ResolveListener(resolver);
    try {
      l.loop =
          RequestLoop.start(
              "memwire-shuffle-service-resolve",
              new InetSocketAddress(address, port),
              4 + ServiceProtocol.MAX_FRAME,
              timeout,
              l);
    } catch (IOException e) {
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
    LOG.info(
        "shuffle service resolve port {}:{}: readers re-resolve pointers of {} directory chunks "
            + "of the previous run",
        address.getHostAddress(),
        l.port(),
        resolver.size());
    return l;
  }

  /** The port bound. */
  int port() {
    return loop.port();
  }

  /** A frame is {@code u32 length | u8 type | body}; its length is checked before it is read. */
  @Override
  public int requestLength(ByteBuffer in) throws IOException {
    if (in.position() < 4) {
      return -1;
    }
    int frame = 4 + ServiceProtocol.checkLength(in.getInt(0));
    return in.position() >= frame ? frame : -1;
  }

  @Override
  public ByteBuffer answer(ByteBuffer in, int length) {
    byte type = in.get(4);
    if (type != ServiceProtocol.RESOLVE) {
      return null; // not this port's protocol: closed without an answer
    }
    byte[] body = new byte[length - 5];
    in.get(5, body);
    return resolver
        .answer(new ServiceProtocol.In(type, ByteBuffer.wrap(body)), ByteBuffer.wrap(body))
        .frame();
  }

  @Override
  public ByteBuffer tooLarge() {
    return null; // cannot happen: the length is checked against the largest frame first
  }

  /** Stops accepting and joins the thread. */
  @Override
  public void close() throws InterruptedException {
    loop.close();
  }
}
