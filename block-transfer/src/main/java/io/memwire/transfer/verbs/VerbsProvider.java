package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.SVCRegMr;
import io.memwire.transfer.MemoryAccess;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided reads over RDMA verbs through DiSNI: reliable-connected queue pairs set up by the RDMA
 * connection manager, memory registered with the NIC, and reads posted as {@code IBV_WR_RDMA_READ}
 * work requests that the serving NIC answers without its CPU.
 *
 * <p>Per node: one protection domain; completion queues sized from the device's {@code max_cqe},
 * each with its own thread, added as client queue pairs fill them and closed again as they empty
 * ({@link CompletionQueues}; served queue pairs sit on the first, which lives as long as the node);
 * one connection-manager thread (accepts peers on the server endpoint, which never touches data,
 * and watches client links for disconnects), and one connector thread that re-establishes a queue
 * pair after a remote access error. Client connections are opened lazily by {@link #connect}, each
 * on its own event channel driven by the calling thread with a deadline, because DiSNI's own
 * endpoint connect can wait forever on a route or address error. With {@code authSecret} set, one
 * more thread answers authentication handshakes on the node's TCP port ({@link VerbsAuth}), and
 * only connect requests announced by a successful handshake get a queue pair.
 */
public final class VerbsProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * How long the completion thread keeps polling an empty queue before it arms the channel and
   * sleeps, in microseconds (JVM system property; 0 = sleep at once). Spinning saves a wake-up per
   * completion when reads are in flight back to back, at the cost of CPU on that thread.
   */
  public static final String CQ_SPIN_PROPERTY = TransportSettings.VERBS_CQ_SPIN_MICROS.name();

  private static final int EV_ADDR_RESOLVED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED.ordinal();
  private static final int EV_ROUTE_RESOLVED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED.ordinal();
  private static final int EV_ESTABLISHED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED.ordinal();
  private static final int EV_CONNECT_REQUEST =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST.ordinal();
  private static final int EV_DISCONNECTED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED.ordinal();
  private static final int EV_DEVICE_REMOVAL =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_DEVICE_REMOVAL.ordinal();
  private static final int EV_TIMEWAIT_EXIT =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT.ordinal();

  private final int id = IDS.incrementAndGet();
  private final TransferConfig config;
  private final VerbsProbe.Binding binding;
  private final DeviceLimits limits;
  private final int qpDepth;
  private final int cqEntries;
  private final RdmaEventChannel serverChannel;
  private final RdmaCmId listenId;
  private final IbvContext context;
  private final IbvPd pd;
  private final CompletionQueues<CompletionThread> queues;
  private final int compVectors;
  private final InetSocketAddress localAddress;
  private final Thread cmThread;
  private final ExecutorService connector;
  private final AtomicInteger nextLinkId = new AtomicInteger();
  private final Map<Integer, VerbsConnection> linkOwners = new ConcurrentHashMap<>();
  private final Map<Integer, QpLink> linkById = new ConcurrentHashMap<>();
  private final Set<VerbsConnection> connections = ConcurrentHashMap.newKeySet();
  private final Set<VerbsRegistration> registrations = ConcurrentHashMap.newKeySet();

  /** Server-side ids of accepted peers; only the CM thread touches them until close. */
  private final Set<RdmaCmId> accepted = ConcurrentHashMap.newKeySet();

  private final AtomicLong registeredBytes = new AtomicLong();
  final LongAdder accessErrors = new LongAdder();
  private final LongAdder reconnects = new LongAdder();
  private final LongAdder postCalls = new LongAdder();
  private final LongAdder postedReads = new LongAdder();
  private final LongAdder acceptedTotal = new LongAdder();
  private final LongAdder connectionsRefused = new LongAdder();
  private final AtomicBoolean refusalLogged = new AtomicBoolean();

  /** Counters of completion queues already closed, so the totals do not drop. */
  private final LongAdder closedPolled = new LongAdder();

  private final LongAdder closedPollsWithWork = new LongAdder();
  private final LongAdder closedSleeps = new LongAdder();
  private final LongAdder closedEvents = new LongAdder();
  private final Map<FilePath, LongAdder> filePaths = new EnumMap<>(FilePath.class);
  private final LongAdder copiedBytes = new LongAdder();
  private final Set<FilePath> notedPaths = ConcurrentHashMap.newKeySet();

  /** Set once the kernel refused to pin a read-only file mapping; it will refuse every one. */
  private volatile boolean readOnlyPinRefused;

  private final boolean iwarp;

  /** Checks peers before they may connect, when a secret is configured; else null. */
  private final VerbsAuth auth;

  private final byte[] secret;
  private volatile boolean closed;

  private VerbsProvider(TransferConfig config, VerbsProbe.Binding binding) throws IOException {
    this.config = config;
    this.binding = binding;
    this.limits = DeviceLimits.query(binding.device().name());
    this.iwarp = binding.device().isIwarp();
    for (FilePath f : FilePath.values()) {
      filePaths.put(f, new LongAdder());
    }
    this.qpDepth = QueueSizing.qpDepth(limits, config);
    this.cqEntries =
        QueueSizing.cqEntries(
            TransportSettings.VERBS_CQ_ENTRIES.fromSystemProperties().orElse(null),
            limits.maxCqe,
            qpDepth);
    int maxQueues =
        QueueSizing.maxQueues(
            TransportSettings.VERBS_MAX_COMPLETION_QUEUES.fromSystemProperties().orElseThrow(),
            limits.maxCq);
    byte[] secret = config.authSecret().orElse(null);
    if (secret != null && iwarp) {
      throw new TransferConfigException(
          TransferConfig.AUTH_SECRET
              + " is set, but "
              + binding.device().name()
              + " is an iWARP device, whose RDMA CM uses the TCP port "
              + "verbs authentication needs; use provider=tcp with a secret, or RoCE/InfiniBand");
    }
    // With a secret, peers authenticate over TCP on the node's port before their RDMA CM
    // connect request (same number, separate port space); bound first so port 0 picks one free
    // in both.
    ServerSocket authSocket = null;
    if (secret != null) {
      authSocket = new ServerSocket();
      try {
        authSocket.bind(new InetSocketAddress(binding.address(), config.port()), 128);
      } catch (IOException e) {
        authSocket.close();
        throw new TransferConfigException(
            "cannot listen for verbs authentication on TCP "
                + binding.address().getHostAddress()
                + ":"
                + config.port()
                + " ("
                + e.getMessage()
                + "); "
                + TransferConfig.AUTH_SECRET
                + " needs the node's port free in TCP too",
            e);
      }
    }
    int port = authSocket != null ? authSocket.getLocalPort() : config.port();
    RdmaEventChannel channel = null;
    try {
      channel = RdmaEventChannel.createEventChannel();
    } finally {
      if (channel == null && authSocket != null) {
        authSocket.close();
      }
    }
    this.serverChannel = channel;
    if (serverChannel == null) {
      throw new IOException("rdma_create_event_channel failed (is rdma_ucm loaded?)");
    }
    RdmaCmId listen = null;
    IbvPd createdPd = null;
    CompletionQueues<CompletionThread> cq = null;
    try {
      listen = serverChannel.createId(RdmaCm.RDMA_PS_TCP);
      InetSocketAddress want = new InetSocketAddress(binding.address(), port);
      try {
        listen.bindAddr(want);
        listen.listen(1024);
      } catch (IOException e) {
        throw new TransferConfigException(
            "cannot listen for RDMA connections on "
                + want.getAddress().getHostAddress()
                + ":"
                + port
                + " ("
                + e.getMessage()
                + "); check bindAddress, device and port",
            e);
      }
      SocketAddress bound = listen.getSource();
      this.localAddress =
          bound instanceof InetSocketAddress && ((InetSocketAddress) bound).getPort() > 0
              ? new InetSocketAddress(binding.address(), ((InetSocketAddress) bound).getPort())
              : want;
      this.context = listen.getVerbs();
      if (context == null) {
        throw new TransferConfigException(
            TransferConfig.BIND_ADDRESS
                + "="
                + binding.address().getHostAddress()
                + " is not served by an RDMA device according "
                + "to rdma_cm");
      }
      createdPd = context.allocPd();
      this.compVectors = QueueSizing.compVectors(context);
      long spinNanos = TimeUnit.MICROSECONDS.toNanos(cqSpinMicros());
      cq =
          new CompletionQueues<>(
              QueueSizing.queuePairsPerQueue(cqEntries, qpDepth),
              maxQueues,
              index ->
                  new CompletionThread(
                      context,
                      cqEntries,
                      index % compVectors,
                      spinNanos,
                      this::completed,
                      "memwire-verbs-" + id + "-cq" + (index == 0 ? "" : "-" + index)),
              this::onConnector,
              this::keepCounters);
      cq.openFirst();
    } catch (IOException | RuntimeException e) {
      if (authSocket != null) {
        authSocket.close();
      }
      if (cq != null) {
        cq.close();
      }
      CmSupport.deallocQuietly(createdPd);
      CmSupport.destroyQuietly(listen);
      try {
        serverChannel.destroyEventChannel();
      } catch (IOException ignored) {
        // nothing more to free
      }
      throw e;
    }
    this.listenId = listen;
    this.pd = createdPd;
    this.queues = cq;
    this.connector =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-verbs-" + id + "-connector");
              t.setDaemon(true);
              return t;
            });
    this.auth =
        authSocket == null
            ? null
            : new VerbsAuth(
                secret,
                authSocket,
                localAddress,
                config.connectTimeout().toNanos(),
                (int) Math.min(5000, config.connectTimeout().toMillis()),
                System::nanoTime,
                "memwire-verbs-" + id + "-auth");
    this.secret = secret;
    this.cmThread = new Thread(this::cmLoop, "memwire-verbs-" + id + "-cm");
    cmThread.setDaemon(true);
    cmThread.start();
    if (auth != null) {
      auth.start();
      LOG.info(
          "verbs provider on {}: {} is set, so peers authenticate over TCP port {} before "
              + "connecting; unannounced RDMA connect requests are refused",
          localAddress,
          TransferConfig.AUTH_SECRET,
          port);
    }
    LOG.info(
        "verbs provider on {} ({}, {}): {} reads in flight per queue pair; completion queues of "
            + "{} entries for {} queue pairs each, added as connections grow, at most {} ({}) "
            + "for {} outgoing connections; CQ spin {} us; device {}",
        localAddress,
        binding,
        iwarp ? "iWARP: read destinations registered with REMOTE_WRITE" : "InfiniBand/RoCE",
        qpDepth,
        cqEntries,
        queues.perQueue(),
        queues.maxQueues(),
        TransportSettings.VERBS_MAX_COMPLETION_QUEUES.name(),
        connectionLimit(),
        cqSpinMicros(),
        limits);
  }

  /** Outgoing queue pairs this node may hold at once: its hard connection limit. */
  int connectionLimit() {
    return queues.perQueue() * queues.maxQueues();
  }

  private void onConnector(Runnable task) {
    connector.execute(task);
  }

  private void keepCounters(CompletionThread t) {
    closedPolled.add(t.polled());
    closedPollsWithWork.add(t.pollsWithWork());
    closedSleeps.add(t.sleeps());
    closedEvents.add(t.events());
  }

  /**
   * Opens the provider: loads libdisni, resolves the bind address or device to an RDMA port,
   * listens for peers and starts the completion and connection-manager threads.
   *
   * @throws TransferConfigException when verbs cannot run with this configuration
   */
  public static TransportProvider open(TransferConfig config) {
    DisniLibrary.loadError()
        .ifPresent(
            why -> {
              throw new TransferConfigException(why);
            });
    VerbsProbe.Binding b = VerbsProbe.resolve(config, RdmaInventory.system());
    try {
      return new VerbsProvider(config, b);
    } catch (IOException e) {
      throw new TransferConfigException(
          "cannot start the verbs provider on " + b + ": " + e.getMessage(), e);
    }
  }

  static long cqSpinMicros() {
    return TransportSettings.VERBS_CQ_SPIN_MICROS.fromSystemProperties().orElseThrow();
  }

  @Override
  public ProviderKind kind() {
    return ProviderKind.VERBS;
  }

  @Override
  public InetSocketAddress localAddress() {
    return localAddress;
  }

  /**
   * Reads one queue pair may have outstanding: the device's {@code max_qp_rd_atom}, also capped by
   * {@code maxOutstandingRequests} and by {@code max_cqe}, so a queue pair's completions always fit
   * its place on a completion queue.
   */
  @Override
  public int maxReadsInFlightPerConnection() {
    return qpDepth;
  }

  @Override
  public ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset) {
    if (file != null && remoteReadable) {
      return registerFile(buffer, address, null, file, fileOffset);
    }
    ensureOpen();
    int length = buffer.capacity();
    int access = accessFor(remoteReadable ? Use.SERVED : Use.DESTINATION, iwarp);
    try {
      return track(
          new VerbsRegistration(
              this, regMr(address, length, access), address, length, remoteReadable, null));
    } catch (IOException e) {
      throw registrationFailed(length, e);
    }
  }

  /** What a registration is for; decides its access flags. */
  enum Use {
    /** A pool buffer reads land in. */
    DESTINATION,
    /** A caller's buffer served to peers (it may also be a read destination on RoCE and IB). */
    SERVED,
    /** A file mapping served to peers. */
    FILE
  }

  /**
   * Access flags for a registration. Served memory is never remotely writable. An iWARP RNIC places
   * RDMA Read responses into the sink with a remote write (iWARP's Read Response targets a tagged
   * buffer), so read destinations there need REMOTE_WRITE; InfiniBand and RoCE write them locally
   * and get LOCAL_WRITE only. File mappings get REMOTE_READ only: no write access, so registering
   * them never dirties a page.
   */
  static int accessFor(Use use, boolean iwarp) {
    switch (use) {
      case DESTINATION:
        return IbvMr.IBV_ACCESS_LOCAL_WRITE | (iwarp ? IbvMr.IBV_ACCESS_REMOTE_WRITE : 0);
      case SERVED:
        return IbvMr.IBV_ACCESS_REMOTE_READ | IbvMr.IBV_ACCESS_LOCAL_WRITE;
      default:
        return IbvMr.IBV_ACCESS_REMOTE_READ;
    }
  }

  /**
   * Registers a file region by the first of three ways that works: the read-only mapping itself;
   * where the kernel cannot pin a read-only shared mapping (Linux before 6.2 pins with
   * FOLL_FORCE|FOLL_WRITE and gets EFAULT), a read-write shared mapping of the same file range,
   * registered with REMOTE_READ only (nothing writes through it, no page is dirtied); and, when the
   * file cannot be opened for writing, a pinned private copy in direct memory (a memcpy of the
   * region and twice its memory). Each way is counted in {@link #counters()}.
   */
  @Override
  public ProviderRegistration registerFile(
      ByteBuffer mapping, long address, Path file, FileChannel channel, long fileOffset) {
    ensureOpen();
    int length = mapping.capacity();
    int access = accessFor(Use.FILE, iwarp);
    IOException readOnlyFailure = null;
    if (!readOnlyPinRefused) {
      try {
        VerbsRegistration r =
            track(
                new VerbsRegistration(
                    this, regMr(address, length, access), address, length, true, null));
        fileRegistered(FilePath.READ_ONLY_MAPPING, file, length, null);
        return r;
      } catch (IOException e) {
        if (!isBadAddress(e)) {
          throw registrationFailed(length, e);
        }
        readOnlyFailure = e;
        readOnlyPinRefused = true;
        LOG.info(
            "this kernel ({}) cannot pin read-only file mappings for RDMA ({}): file "
                + "regions are registered through read-write shared mappings (REMOTE_READ only), "
                + "or served from private copies when a file is not writable",
            System.getProperty("os.version"),
            e.getMessage());
      }
    }
    String why;
    if (file == null) {
      why = "the file's path is unknown";
    } else {
      try {
        return registerSharedMapping(file, fileOffset, length, access);
      } catch (IOException e) {
        why = e.toString();
      }
    }
    return registerCopy(mapping, file, length, why, readOnlyFailure);
  }

  private ProviderRegistration registerSharedMapping(
      Path file, long fileOffset, int length, int access) throws IOException {
    MappedByteBuffer shared;
    FileTime modified = Files.getLastModifiedTime(file);
    // Opening for writing needs write permission; the mapping outlives the channel.
    try (FileChannel rw =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      shared = rw.map(FileChannel.MapMode.READ_WRITE, fileOffset, length);
    }
    long sharedAddress = MemoryAccess.address(shared);
    try {
      VerbsRegistration r =
          track(
              new VerbsRegistration(
                  this,
                  regMr(sharedAddress, length, access),
                  sharedAddress,
                  length,
                  true,
                  () -> MemoryAccess.free(shared)));
      restoreModified(file, modified);
      fileRegistered(FilePath.SHARED_MAPPING, file, length, null);
      return r;
    } catch (IOException | RuntimeException e) {
      MemoryAccess.free(shared);
      throw e instanceof IOException
          ? (IOException) e
          : new IOException("ibv_reg_mr of the read-write mapping failed: " + e, e);
    }
  }

  /**
   * Pinning takes write faults on the shared mapping (the same FOLL_WRITE that fails on the
   * read-only one), and the kernel stamps the file's mtime on a write fault although no byte
   * changes; set it back so tools that watch mtime see the file as it was. The ctime stays new.
   */
  private static void restoreModified(Path file, FileTime modified) {
    try {
      if (!Files.getLastModifiedTime(file).equals(modified)) {
        Files.setLastModifiedTime(file, modified);
      }
    } catch (IOException e) {
      LOG.debug("cannot restore the mtime of {}", file, e);
    }
  }

  private ProviderRegistration registerCopy(
      ByteBuffer mapping, Path file, int length, String why, IOException readOnlyFailure) {
    ByteBuffer copy = ByteBuffer.allocateDirect(length);
    copy.put(mapping.duplicate().clear()).clear();
    long copyAddress = MemoryAccess.address(copy);
    try {
      VerbsRegistration r =
          track(
              new VerbsRegistration(
                  this,
                  regMr(copyAddress, length, accessFor(Use.FILE, iwarp)),
                  copyAddress,
                  length,
                  true,
                  () -> MemoryAccess.free(copy)));
      fileRegistered(FilePath.PRIVATE_COPY, file, length, why);
      return r;
    } catch (IOException e) {
      MemoryAccess.free(copy);
      if (readOnlyFailure != null) {
        e.addSuppressed(readOnlyFailure);
      }
      throw registrationFailed(length, e);
    }
  }

  /** How a file region ended up registered. */
  enum FilePath {
    READ_ONLY_MAPPING("verbsFileRegionsReadOnlyMapping"),
    SHARED_MAPPING("verbsFileRegionsSharedMapping"),
    PRIVATE_COPY("verbsFileRegionsPrivateCopy");

    final String counter;

    FilePath(String counter) {
      this.counter = counter;
    }
  }

  private void fileRegistered(FilePath how, Path file, int length, String why) {
    filePaths.get(how).increment();
    if (how == FilePath.PRIVATE_COPY) {
      copiedBytes.add(length);
    }
    if (notedPaths.add(how)) {
      LOG.info(
          "file regions: first registered as {} ({} bytes of {}){}",
          how,
          length,
          file,
          why == null ? "" : "; no read-write mapping because " + why);
    } else {
      LOG.debug(
          "file region of {} bytes of {} registered as {}{}",
          length,
          file,
          how,
          why == null ? "" : " (" + why + ")");
    }
  }

  private static boolean isBadAddress(IOException e) {
    return String.valueOf(e.getMessage()).contains("Bad address");
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("verbs provider is closed");
    }
  }

  private VerbsRegistration track(VerbsRegistration r) {
    registrations.add(r);
    registeredBytes.addAndGet(r.length());
    return r;
  }

  private IbvMr regMr(long address, int length, int access) throws IOException {
    SVCRegMr call = pd.regMr(address, length, access);
    try {
      return call.execute().getMr();
    } finally {
      call.free();
    }
  }

  private RegistrationException registrationFailed(int length, IOException e) {
    return new RegistrationException(
        "ibv_reg_mr of "
            + length
            + " bytes failed on "
            + binding.device().name()
            + ": "
            + e.getMessage()
            + "; pinned memory counts against "
            + "ulimit -l (memlock), which must cover "
            + TransferConfig.REGISTRATION_BUDGET,
        e);
  }

  void registrationReleased(VerbsRegistration r, int length) {
    if (registrations.remove(r)) {
      registeredBytes.addAndGet(-length);
    }
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (closed) {
      throw new IllegalStateException("verbs provider is closed");
    }
    QpLink link = openLink(peer);
    VerbsConnection c = new VerbsConnection(this, peer, link);
    linkOwners.put(link.id, c);
    connections.add(c);
    if (closed) {
      c.close();
      throw new TransferConnectionException("verbs provider closed", peer, null);
    }
    return c;
  }

  /**
   * Resolves, routes and connects a fresh queue pair to {@code peer} within the connect timeout,
   * driving the link's own CM event channel from this thread.
   */
  QpLink openLink(InetSocketAddress peer) throws TransferException {
    CompletionQueues<CompletionThread>.Slot slot = placeQueuePair(peer);
    try {
      return openLink(peer, slot);
    } catch (TransferException | RuntimeException e) {
      queues.release(slot);
      throw e;
    }
  }

  /**
   * A place on a completion queue for one more client queue pair, opening a queue when all are
   * full; at the hard limit a clear, counted refusal, before any network work.
   */
  private CompletionQueues<CompletionThread>.Slot placeQueuePair(InetSocketAddress peer)
      throws TransferConnectionException {
    try {
      return queues.acquire();
    } catch (CompletionQueues.LimitReachedException e) {
      connectionsRefused.increment();
      String why =
          "verbs connection limit reached: "
              + e.getMessage()
              + ", so this node holds at most "
              + connectionLimit()
              + " outgoing queue pairs ("
              + TransportSettings.VERBS_MAX_COMPLETION_QUEUES.name()
              + "="
              + queues.maxQueues()
              + ", "
              + cqEntries
              + " completion-queue entries, "
              + qpDepth
              + " per queue pair); lower "
              + TransferConfig.CONNECTION_IDLE_TIMEOUT
              + " so idle ones close, or raise the limit";
      if (refusalLogged.compareAndSet(false, true)) {
        LOG.warn("{} (further refusals are counted as verbsConnectionsRefused)", why);
      } else {
        LOG.debug(why);
      }
      throw new TransferConnectionException(why, peer, null);
    } catch (IOException e) {
      throw new TransferConnectionException(
          "cannot create another completion queue on "
              + binding.device().name()
              + ": "
              + e.getMessage(),
          peer,
          e);
    }
  }

  private QpLink openLink(InetSocketAddress peer, CompletionQueues<CompletionThread>.Slot slot)
      throws TransferException {
    long timeoutMs = config.connectTimeout().toMillis();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    RdmaEventChannel ch;
    try {
      ch = RdmaEventChannel.createEventChannel();
    } catch (IOException e) {
      throw new TransferConnectionException(
          "cannot create an RDMA event channel: " + e.getMessage(), peer, e);
    }
    if (ch == null) {
      throw new TransferConnectionException("cannot create an RDMA event channel", peer, null);
    }
    RdmaCmId cm = null;
    IbvQP qp = null;
    try {
      cm = ch.createId(RdmaCm.RDMA_PS_TCP);
      // Bound to our address so the route leaves through our device (and our PD and CQ fit).
      cm.bindAddr(new InetSocketAddress(binding.address(), 0));
      cm.resolveAddr(null, peer, (int) Math.max(100, timeoutMs));
      await(ch, EV_ADDR_RESOLVED, deadline, timeoutMs, "address resolution", peer);
      cm.resolveRoute((int) Math.max(100, remainingMs(deadline)));
      await(ch, EV_ROUTE_RESOLVED, deadline, timeoutMs, "route resolution", peer);
      IbvContext ctx = cm.getVerbs();
      if (ctx == null || ctx.getCmd_fd() != context.getCmd_fd()) {
        throw new TransferConnectionException(
            "the route to the peer does not leave through " + binding.device().name(), peer, null);
      }
      if (secret != null) {
        SocketAddress own = cm.getSource();
        if (!(own instanceof InetSocketAddress)) {
          throw new TransferConnectionException(
              "the RDMA CM id has no source address to " + "announce for authentication",
              peer,
              null);
        }
        VerbsAuth.authenticate(secret, (InetSocketAddress) own, peer, deadline);
      }
      qp = cm.createQP(pd, CmSupport.qpAttributes(qpDepth, slot.queue()));
      if (qp == null) {
        throw new TransferConnectionException("rdma_create_qp failed", peer, null);
      }
      cm.connect(CmSupport.connParam());
      await(ch, EV_ESTABLISHED, deadline, timeoutMs, "connection establishment", peer);
      int linkId = nextLinkId.incrementAndGet() & 0x7fffffff;
      QpLink link = new QpLink(linkId, ch, cm, qp, qpDepth, slot);
      linkById.put(linkId, link);
      return link;
    } catch (TransferException e) {
      abandon(ch, cm, qp);
      throw e;
    } catch (IOException | RuntimeException e) {
      abandon(ch, cm, qp);
      throw new TransferConnectionException("cannot connect over RDMA: " + e.getMessage(), peer, e);
    }
  }

  private static long remainingMs(long deadline) {
    return TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
  }

  private static void await(
      RdmaEventChannel ch,
      int expected,
      long deadline,
      long timeoutMs,
      String phase,
      InetSocketAddress peer)
      throws IOException, TransferException {
    while (true) {
      long left = remainingMs(deadline);
      if (left <= 0) {
        throw new TransferTimeoutException(
            "RDMA " + phase + " did not complete within " + timeoutMs + " ms (connectTimeout)",
            peer);
      }
      RdmaCmEvent ev = ch.getCmEvent((int) Math.min(left, CmSupport.CM_WAIT_MS));
      if (ev == null) {
        continue;
      }
      int type = ev.getEvent();
      if (type == expected) {
        return;
      }
      String name = CmSupport.eventName(type);
      String hint =
          type == RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED.ordinal()
              ? ": nothing listens there or the peer refused (is it a Memwire verbs node?)"
              : type == RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_ERROR.ordinal()
                      || type == RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_ERROR.ordinal()
                  ? ": no RDMA path to the peer's address"
                  : "";
      throw new TransferConnectionException(
          "RDMA " + phase + " failed with " + name + hint, peer, null);
    }
  }

  private static void abandon(RdmaEventChannel ch, RdmaCmId cm, IbvQP qp) {
    if (cm != null) {
      if (qp != null) {
        try {
          cm.destroyQP();
        } catch (IOException | RuntimeException ignored) {
          // best effort on a failed connect
        }
      }
      CmSupport.destroyQuietly(cm);
    }
    try {
      ch.destroyEventChannel();
    } catch (IOException | RuntimeException ignored) {
      // best effort on a failed connect
    }
  }

  /** Completion-thread entry: routes by the link id in the wr_id. */
  private void completed(long wrId, int status) {
    int linkId = QpLink.linkOf(wrId);
    QpLink link = linkById.get(linkId);
    VerbsConnection owner = linkOwners.get(linkId);
    if (link == null || owner == null) {
      return; // a late completion of a retired link
    }
    owner.completed(link, QpLink.seqOf(wrId), status);
  }

  void reconnectLater(VerbsConnection c, QpLink old) {
    try {
      connector.execute(() -> c.reconnect(old));
    } catch (RejectedExecutionException e) {
      c.fail(new TransferConnectionException("verbs provider closed", c.peer(), null));
    }
  }

  /** Registers a re-established link's owner (called by the connection through openLink). */
  void linkOpened(QpLink link, VerbsConnection owner) {
    linkOwners.put(link.id, owner);
  }

  /** Destroys a link whose QP is already in the error state, off the completion thread. */
  void retireLater(QpLink l) {
    try {
      connector.execute(() -> retire(l));
    } catch (RejectedExecutionException e) {
      retire(l);
    }
  }

  /** Destroys a link now, forgets it and frees its place on its completion queue. */
  void retire(QpLink l) {
    l.destroy();
    linkRetired(l);
    queues.release(l.slot);
  }

  void linkRetired(QpLink l) {
    linkById.remove(l.id);
    linkOwners.remove(l.id);
  }

  void connectionFailed(VerbsConnection c) {
    connections.remove(c);
  }

  /** Accepts peers and watches client links; the only thread using the server channel. */
  private void cmLoop() {
    while (!closed) {
      try {
        RdmaCmEvent ev = serverChannel.getCmEvent(CmSupport.CM_WAIT_MS);
        if (ev != null) {
          serverEvent(ev);
        }
        sweepLinks();
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          LOG.warn("RDMA connection-manager event handling failed; continuing", e);
        }
      }
    }
  }

  private void serverEvent(RdmaCmEvent ev) {
    int type = ev.getEvent();
    RdmaCmId peerId = ev.getConnIdPriv();
    if (type == EV_CONNECT_REQUEST) {
      if (peerId == null) {
        return;
      }
      if (auth != null && !admitted(peerId)) {
        return;
      }
      try {
        if (closed) {
          throw new IOException("provider closing");
        }
        // The serving side only answers reads in the NIC: a QP with the smallest queues.
        IbvQP qp = peerId.createQP(pd, CmSupport.qpAttributes(1, queues.first()));
        if (qp == null) {
          throw new IOException("rdma_create_qp failed");
        }
        accepted.add(peerId);
        peerId.accept(CmSupport.connParam());
        acceptedTotal.increment();
      } catch (IOException | RuntimeException e) {
        LOG.warn("refusing an RDMA connection request on {}: {}", localAddress, e.toString());
        dropAccepted(peerId);
      }
    } else if (type == EV_ESTABLISHED) {
      LOG.debug("accepted an RDMA connection on {}", localAddress);
    } else if (type != EV_TIMEWAIT_EXIT && peerId != null && accepted.contains(peerId)) {
      // DISCONNECTED, CONNECT_ERROR, UNREACHABLE, REJECTED: the peer's QP is gone.
      LOG.debug(
          "accepted RDMA connection on {} ended: {}", localAddress, CmSupport.eventName(type));
      dropAccepted(peerId);
    }
  }

  /**
   * Whether an authenticated handshake announced this request's source; if not, the request is
   * destroyed (the peer sees a reject) before any queue pair exists for it.
   */
  private boolean admitted(RdmaCmId peerId) {
    SocketAddress from = null;
    try {
      from = peerId.getDestination();
    } catch (IOException | RuntimeException e) {
      LOG.debug("no source address on an RDMA connect request", e);
    }
    if (auth.admit(from instanceof InetSocketAddress ? (InetSocketAddress) from : null)) {
      return true;
    }
    LOG.warn(
        "refused an RDMA connect request from {} on {}: no authenticated handshake "
            + "announced it ({} is set)",
        from,
        localAddress,
        TransferConfig.AUTH_SECRET);
    CmSupport.destroyQuietly(peerId);
    return false;
  }

  private void dropAccepted(RdmaCmId peerId) {
    accepted.remove(peerId);
    try {
      peerId.disconnect();
    } catch (IOException | RuntimeException ignored) {
      // may not be connected
    }
    if (peerId.getQp() != null) {
      try {
        peerId.destroyQP();
      } catch (IOException | RuntimeException e) {
        LOG.debug("destroying an accepted QP failed", e);
      }
    }
    CmSupport.destroyQuietly(peerId);
  }

  private void sweepLinks() {
    for (VerbsConnection c : connections) {
      QpLink l = c.currentLink();
      if (l == null) {
        continue;
      }
      RdmaCmEvent ev;
      try {
        ev = l.pollEvent();
      } catch (IOException e) {
        continue;
      }
      if (ev != null && (ev.getEvent() == EV_DISCONNECTED || ev.getEvent() == EV_DEVICE_REMOVAL)) {
        c.linkLost(
            l, "the peer closed the RDMA connection (" + CmSupport.eventName(ev.getEvent()) + ")");
      }
    }
  }

  @Override
  public Map<String, Long> counters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("verbsConnections", (long) connections.size());
    m.put("verbsQueuePairs", (long) linkById.size());
    m.put("verbsAcceptedPeers", (long) accepted.size());
    m.put("verbsAcceptedTotal", acceptedTotal.sum());
    m.put("verbsRegistrations", (long) registrations.size());
    m.put("verbsRegisteredBytes", registeredBytes.get());
    for (FilePath f : FilePath.values()) {
      m.put(f.counter, filePaths.get(f).sum());
    }
    m.put("verbsFileCopyBytes", copiedBytes.sum());
    if (auth != null) {
      m.put("verbsAuthAccepted", auth.proofsAccepted.sum());
      m.put("verbsAuthRejected", auth.proofsRejected.sum());
      m.put("verbsAuthRefusedRequests", auth.requestsRefused.sum());
    }
    m.put("verbsRemoteAccessErrors", accessErrors.sum());
    m.put("verbsReconnects", reconnects.sum());
    m.put("verbsPostCalls", postCalls.sum());
    m.put("verbsPostedReads", postedReads.sum());
    queues.withQueues(
        live -> {
          long polled = closedPolled.sum();
          long withWork = closedPollsWithWork.sum();
          long sleeps = closedSleeps.sum();
          long events = closedEvents.sum();
          for (CompletionThread t : live) {
            polled += t.polled();
            withWork += t.pollsWithWork();
            sleeps += t.sleeps();
            events += t.events();
          }
          m.put("verbsCompletions", polled);
          m.put("verbsCqPollsWithWork", withWork);
          m.put("verbsCqSleeps", sleeps);
          m.put("verbsCqEvents", events);
          return null;
        });
    m.put("verbsCompletionQueues", (long) queues.queues());
    m.put("verbsCompletionQueuesPeak", (long) queues.peakQueues());
    m.put("verbsCompletionQueuesOpened", queues.opened());
    m.put("verbsQueuePairsPerCompletionQueue", (long) queues.perQueue());
    m.put("verbsConnectionLimit", (long) connectionLimit());
    m.put("verbsConnectionsRefused", connectionsRefused.sum());
    return m;
  }

  /** Counts {@code calls} ibv_post_send calls that posted {@code reads} reads. */
  void posted(int calls, int reads) {
    postCalls.add(calls);
    postedReads.add(reads);
  }

  void reconnected() {
    reconnects.increment();
  }

  /** The binding in use (device, port, address). */
  public VerbsProbe.Binding binding() {
    return binding;
  }

  /**
   * Closes every connection (destroying its QP), stops accepting, destroys accepted QPs, stops the
   * threads, then frees the CQ, leftover registrations and the protection domain.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (auth != null) {
      auth.close();
    }
    join(cmThread);
    for (VerbsConnection c : connections.toArray(new VerbsConnection[0])) {
      c.fail(new TransferConnectionException("verbs provider closed", c.peer(), null));
    }
    connector.shutdown();
    try {
      if (!connector.awaitTermination(
          config.connectTimeout().toMillis() + 5000, TimeUnit.MILLISECONDS)) {
        connector.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      connector.shutdownNow();
    }
    for (QpLink l : linkById.values().toArray(new QpLink[0])) {
      retire(l);
    }
    for (RdmaCmId a : accepted.toArray(new RdmaCmId[0])) {
      dropAccepted(a);
    }
    CmSupport.destroyQuietly(listenId);
    try {
      serverChannel.destroyEventChannel();
    } catch (IOException | RuntimeException e) {
      LOG.debug("destroying the server event channel failed", e);
    }
    queues.close();
    int leftover = 0;
    for (VerbsRegistration r : registrations.toArray(new VerbsRegistration[0])) {
      r.forceRelease();
      leftover++;
    }
    if (leftover > 0) {
      LOG.warn(
          "verbs provider on {} deregistered {} regions its node had not closed",
          localAddress,
          leftover);
    }
    CmSupport.deallocQuietly(pd);
    LOG.debug("verbs provider on {} stopped: {}", localAddress, counters());
  }

  private static void join(Thread t) {
    try {
      t.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "VerbsProvider{" + localAddress + ", " + binding + "}";
  }
}
