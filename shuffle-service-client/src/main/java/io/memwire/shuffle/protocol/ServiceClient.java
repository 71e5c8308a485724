package io.memwire.shuffle.protocol;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import jdk.net.ExtendedSocketOptions;

/**
 * An executor's connection to its node's shuffle service over the local socket. Calls are
 * serialized and each has a deadline: a service that does not answer in time has its connection
 * closed and the call fails with an {@link IOException}. A broken connection is re-opened (and the
 * executor registered again) once per call, so a restarted service is picked up by the next call.
 *
 * <p>Before it sends anything on a new connection, the client checks who listens: the socket's peer
 * credentials must name one of the expected service users ({@link #defaultServiceUsers}: root and
 * this process's own user, unless given), or it fails with a {@link ServiceIdentityException} and
 * the token never leaves the executor.
 *
 * <p>Threads: calls run on the caller's thread (map tasks publishing, Spark's block-manager thread
 * removing a shuffle); the deadline is enforced by the client's own daemon timer thread ({@code
 * memwire-shuffle-service-client-timer}), joined by {@link #close}.
 */
public final class ServiceClient implements AutoCloseable {
  /** Prefix of the shuffle service's own configuration keys. */
  public static final String SERVICE_KEY_PREFIX = "memwire.shuffle.service.";

  /** Prefix of the service's transfer-node keys (the transport's setting names follow it). */
  public static final String SERVICE_TRANSFER_KEY_PREFIX = SERVICE_KEY_PREFIX + "transfer.";

  /** Who this executor is, sent in REGISTER on every (re)connection. */
  public record Registration(
      String application, String executor, byte[] token, String driverHost, int driverPort) {}

  private final Path socket;
  private final Registration registration;
  private final Duration timeout;
  private final Set<String> serviceUsers;
  private final ScheduledThreadPoolExecutor timer;

  @GuardedBy("this")
  private SocketChannel channel;

  @GuardedBy("this")
  private boolean closed;

  private ServiceClient(
      Path socket, Registration registration, Duration timeout, Set<String> serviceUsers) {
    this.socket = socket;
    this.registration = registration;
    this.timeout = timeout;
    this.serviceUsers = Set.copyOf(serviceUsers);
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-service-client-timer");
              t.setDaemon(true);
              return t;
            });
    this.timer.setRemoveOnCancelPolicy(true);
  }

  /**
   * Connects to the service listening on {@code socket} and registers this executor.
   *
   * @throws ServiceException when the service refuses the registration
   * @throws IOException when no service answers on the socket
   */
  public static ServiceClient connect(Path socket, Registration registration, Duration timeout)
      throws IOException {
    return connect(socket, registration, timeout, defaultServiceUsers());
  }

  /** The socket executors and the service meet on when none is configured. */
  public static Path defaultSocket() {
    return Path.of(System.getProperty("java.io.tmpdir"), "memwire-shuffle-service", "service.sock");
  }

  /**
   * The users a shuffle service is expected to run as when none are configured: root and this
   * process's own user.
   */
  public static Set<String> defaultServiceUsers() {
    return new java.util.TreeSet<>(List.of("root", System.getProperty("user.name")));
  }

  /**
   * Connects to the service listening on {@code socket}, checks that it runs as one of {@code
   * serviceUsers}, and registers this executor.
   *
   * @throws ServiceIdentityException when the listening process runs as another user (nothing was
   *     sent to it)
   * @throws ServiceException when the service refuses the registration
   * @throws IOException when no service answers on the socket
   */
  public static ServiceClient connect(
      Path socket, Registration registration, Duration timeout, Set<String> serviceUsers)
      throws IOException {
    if (serviceUsers.isEmpty()) {
      throw new IllegalArgumentException("no expected shuffle service user");
    }
    ServiceClient c = new ServiceClient(socket, registration, timeout, serviceUsers);
    try {
      synchronized (c) {
        c.open();
      }
    } catch (IOException | RuntimeException e) {
      c.close(); // its timer thread too
      throw e;
    }
    return c;
  }

  /** The socket this client talks to. */
  public Path socket() {
    return socket;
  }

  @GuardedBy("this")
  private void open() throws IOException {
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      ch.connect(UnixDomainSocketAddress.of(socket));
      channel = ch;
      checkPeer(ch);
      ServiceProtocol.Out reg =
          new ServiceProtocol.Out(ServiceProtocol.REGISTER)
              .u16(ServiceProtocol.VERSION)
              .str(registration.application())
              .str(registration.executor())
              .bytes(registration.token())
              .str(registration.driverHost())
              .u16(registration.driverPort());
      exchange(reg).end();
    } catch (IOException | RuntimeException e) {
      dropChannel();
      throw e;
    }
  }

  private void checkPeer(SocketChannel ch) throws IOException {
    String who = ch.getOption(ExtendedSocketOptions.SO_PEERCRED).user().getName();
    if (!serviceUsers.contains(who)) {
      throw new ServiceIdentityException(
          "the process listening on "
              + socket
              + " runs as user "
              + who
              + ", not as an expected shuffle service user "
              + new java.util.TreeSet<>(serviceUsers)
              + "; nothing was sent to it",
          who);
    }
  }

  /**
   * Hands one finished map output to the service, which takes ownership of the files (a hard link),
   * registers them and publishes them in its directory.
   *
   * @param data the data file, or null when the output has none (every partition empty)
   * @return where reducers find the output's slot: the service's directory chunk
   * @throws ServiceException when the service refuses the output (the message says why)
   */
  public synchronized DirectoryPointer publish(
      int shuffleId, int mapIndex, long mapId, Path index, Path data) throws IOException {
    return publish(shuffleId, mapIndex, mapId, index, data, null);
  }

  /**
   * As {@link #publish(int, int, long, Path, Path)}, naming Spark's checksum file of the output too
   * ({@code checksums}, null for none): the service takes its values with the output.
   */
  public synchronized DirectoryPointer publish(
      int shuffleId, int mapIndex, long mapId, Path index, Path data, Path checksums)
      throws IOException {
    ServiceProtocol.In r =
        call(
            new ServiceProtocol.Out(ServiceProtocol.PUBLISH)
                .i32(shuffleId)
                .i32(mapIndex)
                .i64(mapId)
                .str(realPath(index))
                .str(data == null ? "" : realPath(data))
                .str(checksums == null ? "" : realPath(checksums)));
    int chunk = r.i32();
    int entries = r.i32();
    int layout = r.u8();
    RemoteRegion region;
    try {
      region = RemoteRegion.decode(r.rest());
    } catch (IllegalArgumentException e) {
      throw new IOException("bad directory pointer from the shuffle service: " + e.getMessage());
    }
    return pointer(chunk, entries, layout, region);
  }

  /** The pointer an OK answer names, or an IOException when its layout is not one we read. */
  static DirectoryPointer pointer(int chunk, int entries, int layout, RemoteRegion region)
      throws IOException {
    boolean metadata = layout == ServiceProtocol.LAYOUT_METADATA;
    if ((layout & ~ServiceProtocol.LAYOUT_CHECKSUMS) != 0 && !metadata) {
      throw new IOException("unknown directory layout " + layout + " from the shuffle service");
    }
    if ((metadata && entries != 0)
        || (layout == ServiceProtocol.LAYOUT_CHECKSUMS && entries == 0)) {
      throw new IOException(
          "bad directory pointer from the shuffle service: layout "
              + layout
              + ", "
              + entries
              + " entries");
    }
    try {
      return new DirectoryPointer(
          chunk, entries, metadata || (layout & ServiceProtocol.LAYOUT_CHECKSUMS) != 0, region);
    } catch (IllegalArgumentException e) {
      throw new IOException("bad directory pointer from the shuffle service: " + e.getMessage());
    }
  }

  /**
   * The path without links: the service refuses a path with a link anywhere (it cannot tell a
   * legitimate link from a swapped one), so links in a local directory are resolved here.
   */
  private static String realPath(Path p) throws IOException {
    return p.toRealPath().toString();
  }

  /** Asks the service to drop one shuffle of this application (every executor's outputs). */
  public synchronized void removeShuffle(int shuffleId) throws IOException {
    call(new ServiceProtocol.Out(ServiceProtocol.REMOVE_SHUFFLE).i32(shuffleId)).end();
  }

  /** The service's counters (its transfer node's and its own), by name. */
  public synchronized Map<String, Long> stats() throws IOException {
    return decodeStats(call(new ServiceProtocol.Out(ServiceProtocol.STATS)));
  }

  /**
   * The counters of the service on {@code socket}, asked without registering (for monitoring and
   * tests).
   */
  public static Map<String, Long> stats(Path socket, Duration timeout) throws IOException {
    ServiceClient c = new ServiceClient(socket, null, timeout, Set.of());
    synchronized (c) {
      try {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        c.channel = ch;
        ch.connect(UnixDomainSocketAddress.of(socket));
        return decodeStats(c.exchange(new ServiceProtocol.Out(ServiceProtocol.STATS)));
      } finally {
        c.close();
      }
    }
  }

  private static Map<String, Long> decodeStats(ServiceProtocol.In r) throws IOException {
    int n = r.u16();
    Map<String, Long> m = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      m.put(r.str(), r.i64());
    }
    r.end();
    return m;
  }

  @GuardedBy("this")
  private ServiceProtocol.In call(ServiceProtocol.Out request) throws IOException {
    if (closed) {
      throw new IOException("shuffle service client is closed");
    }
    boolean fresh = false;
    if (channel == null) {
      open();
      fresh = true;
    }
    try {
      return exchange(request);
    } catch (ServiceException e) {
      throw e;
    } catch (IOException e) {
      dropChannel();
      if (fresh) {
        throw e;
      }
      open(); // the service may have restarted: register again, then retry once
      return exchange(request);
    }
  }

  @GuardedBy("this")
  private ServiceProtocol.In exchange(ServiceProtocol.Out request) throws IOException {
    SocketChannel ch = channel;
    AtomicBoolean expired = new AtomicBoolean();
    ScheduledFuture<?> deadline =
        timer.schedule(
            () -> {
              expired.set(true);
              closeQuietly(ch);
            },
            timeout.toMillis(),
            TimeUnit.MILLISECONDS);
    ServiceProtocol.In r;
    try {
      try {
        Frames.write(ch, request);
      } catch (IOException e) {
        // A service that refuses a connection at once (user, capacity) says why and closes it,
        // maybe before this write: its reason is still waiting to be read.
        ServiceProtocol.In early = readQuietly(ch);
        if (early != null && early.type() == ServiceProtocol.ERROR) {
          throw new ServiceException(early.u8(), early.str());
        }
        throw e;
      }
      r = Frames.read(ch);
    } catch (ServiceException e) {
      throw e;
    } catch (IOException e) {
      if (expired.get()) {
        throw new IOException(
            "shuffle service on "
                + socket
                + " did not answer within "
                + timeout.toMillis()
                + " ms");
      }
      throw e;
    } finally {
      deadline.cancel(false);
    }
    if (r == null) {
      throw ServiceProtocol.closed();
    }
    if (r.type() == ServiceProtocol.ERROR) {
      throw new ServiceException(r.u8(), r.str());
    }
    if (r.type() != ServiceProtocol.OK) {
      throw new IOException("unexpected frame type " + r.type() + " from the shuffle service");
    }
    return r;
  }

  private static ServiceProtocol.In readQuietly(SocketChannel ch) {
    try {
      return Frames.read(ch);
    } catch (IOException e) {
      return null;
    }
  }

  @GuardedBy("this")
  private void dropChannel() {
    closeQuietly(channel);
    channel = null;
  }

  private static void closeQuietly(SocketChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // closing only
      }
    }
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      dropChannel();
    }
    timer.shutdownNow();
    try {
      timer.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
