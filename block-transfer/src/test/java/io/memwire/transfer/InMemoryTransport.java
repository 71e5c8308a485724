package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.AbstractProviderConnection;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import io.memwire.transfer.spi.WireRead;
import io.memwire.transfer.testing.Await;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * An in-memory transport for tests, in the spirit of an embedded channel: nodes started from one
 * {@code InMemoryTransport} read each other's registered memory through the real provider interface
 * ({@link TransportProvider}, {@link ProviderConnection}, {@link ProviderRegistration}, {@link
 * WireRead}), so {@link TransferNode} and {@link Connection} run unchanged, without sockets.
 *
 * <p>Every posted read is offered to the {@linkplain #script script}, which serves it (the
 * default), delays it, fails it, fails its whole connection or holds it until the test releases it
 * ({@link #held()}, {@link PostedRead#serve()}). Reads are served and delays run on one daemon I/O
 * thread per transport, the thread completions (and the futures chained on them) run on, as a
 * provider's I/O thread would. Serving enforces what a responder does: a live key and a range
 * inside the registration, else a {@link RemoteAccessException}.
 *
 * <p>The provider reports itself as {@link ProviderKind#TCP}; addresses are the loopback address
 * with made-up ports, nothing is bound. Close the transport after its nodes.
 */
public final class InMemoryTransport implements AutoCloseable {
  private static final AtomicInteger IDS = new AtomicInteger();
  private static final AtomicInteger PORTS = new AtomicInteger(31000);

  private final ScheduledExecutorService io;
  private final Map<InetSocketAddress, Provider> nodes = new ConcurrentHashMap<>();
  private final Set<InetSocketAddress> refused = ConcurrentHashMap.newKeySet();
  private final List<PostedRead> held = new CopyOnWriteArrayList<>();
  private final AtomicReference<Runnable> afterOpenCheck = new AtomicReference<>();
  private volatile Function<PostedRead, Action> script = r -> Action.serve();
  private final AtomicLong posted = new AtomicLong();
  private final AtomicLong served = new AtomicLong();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger maxInFlight = new AtomicInteger();
  private final AtomicInteger connects = new AtomicInteger();
  private volatile String stallDetail = "";

  /** What every connection's {@code stallDetail} says from now on (a provider's explanation). */
  public void stallDetail(String detail) {
    stallDetail = detail;
  }

  /** A transport with its own I/O thread. */
  public InMemoryTransport() {
    int id = IDS.incrementAndGet();
    io =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-inmem-io-" + id);
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Starts a node on this transport with {@code config}'s limits and timeouts, at its port when one
   * is configured (so a node can come back at the address of one that closed).
   */
  public TransferNode start(TransferConfig config) {
    return start(config, ConnectionPool.SweepListener.NONE);
  }

  /** As {@link #start(TransferConfig)}, telling {@code sweeps} of each idle-reaper sweep. */
  TransferNode start(TransferConfig config, ConnectionPool.SweepListener sweeps) {
    return new TransferNode(
        config,
        provider(config),
        "in-memory test transport",
        NanoClock.SYSTEM,
        ConnectionPool.newTimer(),
        sweeps);
  }

  /** As {@link #start(TransferConfig)}, with the node's connection pool on {@code time}. */
  public TransferNode start(TransferConfig config, ManualTime time) {
    return start(config, time, ConnectionPool.SweepListener.NONE);
  }

  /** As {@link #start(TransferConfig, ManualTime)}, telling {@code sweeps} of each idle sweep. */
  TransferNode start(TransferConfig config, ManualTime time, ConnectionPool.SweepListener sweeps) {
    return time.start(config, provider(config), "in-memory test transport", sweeps);
  }

  private Provider provider(TransferConfig config) {
    int port = config.port() != 0 ? config.port() : PORTS.incrementAndGet();
    Provider p = new Provider(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    if (nodes.putIfAbsent(p.address, p) != null) {
      throw new TransferConfigException("an in-memory node already listens on " + p.address);
    }
    return p;
  }

  /** Starts a node with the default configuration. */
  public TransferNode start() {
    return start(TransferConfig.defaults());
  }

  /** Decides what happens to each read from now on (called on the posting thread). */
  public void script(Function<PostedRead, Action> decide) {
    this.script = decide;
  }

  /** Connections to {@code peer} fail from now on (true) or work again (false). */
  public void refuseConnections(InetSocketAddress peer, boolean refuse) {
    if (refuse) {
      refused.add(peer);
    } else {
      refused.remove(peer);
    }
  }

  /**
   * Runs {@code action} once, the next time any connection's {@link ProviderConnection#isOpen()} is
   * asked, right after the state was read and before the answer is returned: a failure arriving
   * between a caller's check and what it does next.
   */
  public void afterNextOpenCheck(Runnable action) {
    afterOpenCheck.set(action);
  }

  /** Reads held by the script and not yet released, oldest first. */
  public List<PostedRead> held() {
    return new ArrayList<>(held);
  }

  /** Waits until {@code n} reads are held (or fails the test after {@code timeout}). */
  public List<PostedRead> awaitHeld(int n, Duration timeout) {
    Await.until(
        () -> "expected " + n + " held reads, have " + held.size(),
        timeout,
        () -> held.size() >= n);
    return held();
  }

  /** Reads posted by any connection so far. */
  public long posted() {
    return posted.get();
  }

  /** Reads served (bytes copied and completed) so far. */
  public long served() {
    return served.get();
  }

  /** Reads posted and not yet ended, across connections. */
  public int inFlight() {
    return inFlight.get();
  }

  /** The most reads that were ever in flight at once. */
  public int maxInFlight() {
    return maxInFlight.get();
  }

  /** Connections opened so far. */
  public int connects() {
    return connects.get();
  }

  /** Runs {@code task} on the transport's I/O thread. */
  public void execute(Runnable task) {
    io.execute(task);
  }

  /**
   * {@link Await#until}, under the name shuffle-manager's tests still call (kept until they move to
   * {@link Await}).
   */
  public static void awaitCondition(
      BooleanSupplier condition, Duration timeout, java.util.function.Supplier<String> what) {
    Await.until(what, timeout, condition);
  }

  /** Stops the I/O thread and waits for it. */
  @Override
  public void close() {
    io.shutdownNow();
    try {
      if (!io.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("in-memory I/O thread did not stop");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** What the script does with one read. */
  public static final class Action {
    enum Kind {
      SERVE,
      DELAY,
      FAIL,
      FAIL_CONNECTION,
      HOLD
    }

    final Kind kind;
    final Duration delay;
    final TransferException error;

    private Action(Kind kind, Duration delay, TransferException error) {
      this.kind = kind;
      this.delay = delay;
      this.error = error;
    }

    /** Copy the bytes and complete, on the I/O thread. */
    public static Action serve() {
      return new Action(Kind.SERVE, null, null);
    }

    /** Serve after {@code d}. */
    public static Action delay(Duration d) {
      return new Action(Kind.DELAY, d, null);
    }

    /** Fail this read only with {@code e}, on the I/O thread. */
    public static Action fail(TransferException e) {
      return new Action(Kind.FAIL, null, e);
    }

    /** Fail the read's whole connection with {@code e}, on the I/O thread. */
    public static Action failConnection(TransferException e) {
      return new Action(Kind.FAIL_CONNECTION, null, e);
    }

    /** Keep the read until the test releases it from {@link #held()} (or the connection fails). */
    public static Action hold() {
      return new Action(Kind.HOLD, null, null);
    }
  }

  /** A read as the in-memory wire sees it; the test may release a held one. */
  public final class PostedRead {
    private final InMemoryConnection connection;
    private final WireRead read;

    PostedRead(InMemoryConnection connection, WireRead read) {
      this.connection = connection;
      this.read = read;
    }

    public InetSocketAddress peer() {
      return connection.peer();
    }

    public long remoteKey() {
      return read.remoteKey();
    }

    public long remoteAddress() {
      return read.remoteAddress();
    }

    /** Offset of the read inside its segment. */
    public long offsetInSegment() {
      return read.remoteAddress() - read.source().address();
    }

    public int length() {
      return read.length();
    }

    /** True once the read completed or failed. */
    public boolean isEnded() {
      return read.isEnded();
    }

    /** Serves the read (copies the bytes, completes it) on the I/O thread. */
    public void serve() {
      held.remove(this);
      io.execute(() -> connection.serve(this));
    }

    /** Fails the read with {@code e} on the I/O thread. */
    public void fail(TransferException e) {
      held.remove(this);
      io.execute(() -> connection.end(this, e));
    }

    /** Fails the whole connection with {@code e}, on the calling thread. */
    public void failConnection(TransferException e) {
      held.remove(this);
      connection.fail(e);
    }

    @Override
    public String toString() {
      return "read of " + read.length() + " bytes at +" + offsetInSegment() + " from " + peer();
    }
  }

  /** One node's provider. */
  private final class Provider implements TransportProvider {
    final InetSocketAddress address;
    final Map<Long, Registration> table = new ConcurrentHashMap<>();
    final Set<InMemoryConnection> connections = ConcurrentHashMap.newKeySet();
    final Set<InMemoryConnection> incoming = ConcurrentHashMap.newKeySet();

    Provider(InetSocketAddress address) {
      this.address = address;
    }

    @Override
    public ProviderKind kind() {
      return ProviderKind.TCP;
    }

    @Override
    public InetSocketAddress localAddress() {
      return address;
    }

    @Override
    public ProviderRegistration register(
        ByteBuffer buffer,
        long address,
        boolean remoteReadable,
        FileChannel file,
        long fileOffset) {
      long key;
      do {
        key = ThreadLocalRandom.current().nextLong();
      } while (key == 0 || table.containsKey(key));
      Registration r = new Registration(this, buffer, address, key, remoteReadable);
      if (remoteReadable) {
        table.put(key, r);
      }
      return r;
    }

    @Override
    public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
      if (refused.contains(peer)) {
        throw new TransferConnectionException("connection refused (scripted)", peer, null);
      }
      Provider target = nodes.get(peer);
      if (target == null) {
        throw new TransferConnectionException("no in-memory node at " + peer, peer, null);
      }
      InMemoryConnection c = new InMemoryConnection(this, target);
      connections.add(c);
      target.incoming.add(c);
      connects.incrementAndGet();
      return c;
    }

    @Override
    public void close() {
      nodes.remove(address, this);
      for (InMemoryConnection c : connections.toArray(new InMemoryConnection[0])) {
        c.close();
      }
      for (InMemoryConnection c : incoming.toArray(new InMemoryConnection[0])) {
        c.fail(new TransferConnectionException("peer closed the connection", c.peer(), null));
      }
    }
  }

  /** Registered memory; serving copies under the read lock, deregistering waits for the write. */
  private static final class Registration implements ProviderRegistration {
    final Provider owner;
    final ByteBuffer memory;
    final long address;
    final long key;
    final boolean remoteReadable;
    final ReentrantReadWriteLock copying = new ReentrantReadWriteLock();

    Registration(Provider owner, ByteBuffer memory, long address, long key, boolean readable) {
      this.owner = owner;
      this.memory = memory;
      this.address = address;
      this.key = key;
      this.remoteReadable = readable;
    }

    @Override
    public long remoteKey() {
      return key;
    }

    @Override
    public long localKey() {
      return key;
    }

    @Override
    public long address() {
      return address;
    }

    @Override
    public int length() {
      return memory.capacity();
    }

    @Override
    public void deregister(Runnable onQuiesced) {
      owner.table.remove(key, this);
      copying.writeLock().lock(); // a copy in progress finishes first
      copying.writeLock().unlock();
      onQuiesced.run();
    }
  }

  /** One connection: reads it holds until they end, drained once by {@link #quiesce}. */
  private final class InMemoryConnection extends AbstractProviderConnection {
    private final Provider local;
    private final Provider target;
    private final Set<WireRead> outstanding = new LinkedHashSet<>();

    InMemoryConnection(Provider local, Provider target) {
      super(target.address);
      this.local = local;
      this.target = target;
    }

    @Override
    public String stallDetail() {
      return stallDetail;
    }

    @Override
    public boolean isOpen() {
      boolean open = super.isOpen();
      Runnable hook = afterOpenCheck.getAndSet(null);
      if (hook != null) {
        hook.run();
      }
      return open;
    }

    /** False: a script may delay or hold a read, so reads end in any order. */
    @Override
    public boolean servesInPostOrder() {
      return false;
    }

    @Override
    public void post(List<WireRead> reads) {
      List<PostedRead> accepted = new ArrayList<>(reads.size());
      boolean rejected = false;
      synchronized (this) {
        if (failure() != null) {
          rejected = true;
        } else {
          for (WireRead r : reads) {
            outstanding.add(r);
            accepted.add(new PostedRead(this, r));
          }
          int now = inFlight.addAndGet(reads.size());
          maxInFlight.accumulateAndGet(now, Math::max);
        }
      }
      if (rejected) {
        reject(reads);
        return;
      }
      posted.addAndGet(reads.size());
      try {
        schedule(accepted);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        fail(new TransferConnectionException("in-memory transport closed", peer(), e));
      }
    }

    private void schedule(List<PostedRead> accepted) {
      Function<PostedRead, Action> decide = script;
      for (PostedRead p : accepted) {
        Action a = decide.apply(p);
        switch (a.kind) {
          case SERVE:
            io.execute(() -> serve(p));
            break;
          case DELAY:
            var unused = io.schedule(() -> serve(p), a.delay.toNanos(), TimeUnit.NANOSECONDS);
            break;
          case FAIL:
            io.execute(() -> end(p, a.error));
            break;
          case FAIL_CONNECTION:
            io.execute(() -> fail(a.error));
            break;
          case HOLD:
            held.add(p);
            break;
          default:
            throw new AssertionError(a.kind);
        }
      }
    }

    /** Copies the bytes the read names out of the target's registration, then completes it. */
    void serve(PostedRead p) {
      WireRead r = p.read;
      Registration reg = target.table.get(r.remoteKey());
      if (reg == null) {
        end(
            p,
            new RemoteAccessException(
                RemoteAccessException.Reason.UNKNOWN_KEY,
                "no live region has key 0x" + Long.toHexString(r.remoteKey()),
                r.source(),
                peer()));
        return;
      }
      long off = r.remoteAddress() - reg.address;
      if (off < 0 || off + r.length() > reg.length()) {
        end(
            p,
            new RemoteAccessException(
                RemoteAccessException.Reason.OUT_OF_BOUNDS,
                "["
                    + off
                    + ", +"
                    + r.length()
                    + ") is outside the region of "
                    + reg.length()
                    + " bytes",
                r.source(),
                peer()));
        return;
      }
      boolean closed = false;
      reg.copying.readLock().lock();
      try {
        synchronized (this) {
          if (!outstanding.remove(r)) {
            return; // failed meanwhile: its destination is no longer ours to write
          }
          inFlight.decrementAndGet();
          if (!target.table.containsKey(r.remoteKey())) {
            closed = true; // deregistered before the copy
          } else {
            ByteBuffer src = reg.memory.duplicate();
            src.position((int) off).limit((int) off + r.length());
            r.destination().duplicate().put(src);
          }
        }
      } finally {
        reg.copying.readLock().unlock();
      }
      if (closed) {
        r.fail(
            new RemoteAccessException(
                RemoteAccessException.Reason.REGION_CLOSED,
                "region closed while the read was in flight",
                r.source(),
                peer()));
        return;
      }
      served.incrementAndGet();
      r.complete();
    }

    /** Ends a read with an error (one read only). */
    void end(PostedRead p, TransferException e) {
      synchronized (this) {
        if (!outstanding.remove(p.read)) {
          return;
        }
        inFlight.decrementAndGet();
      }
      p.read.fail(e);
    }

    @Override
    protected void quiesce(TransferException cause, List<WireRead> heldReads) {
      synchronized (this) {
        heldReads.addAll(outstanding);
        inFlight.addAndGet(-outstanding.size());
        outstanding.clear();
      }
      held.removeIf(p -> p.connection == this);
      local.connections.remove(this);
      target.incoming.remove(this);
    }

    @Override
    public String toString() {
      return "in-memory connection " + local.address + " -> " + peer();
    }
  }
}
