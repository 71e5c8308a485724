package io.memwire.transfer.ucx;

import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderAllocation;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import io.memwire.transfer.verbs.MemlockLimit;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpListener;
import org.openucx.jucx.ucp.UcpListenerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ucx provider: one UCX context and worker per node on {@link UcxProgressThread}, a TCP control
 * listener on the node's port (authentication, the UCX listener's port, remote keys: {@link
 * UcxControl}), a UCX listener on an ephemeral port that authenticated peers connect endpoints to
 * (rdma_cm on RDMA devices), and one-sided GETs by UCX endpoints ({@link UcxConnection}).
 */
public final class UcxProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);
  private static final AtomicInteger NODES = new AtomicInteger();

  private final TransferConfig config;
  private final UcxProgressThread progress;
  private final UcxRegistrar registrar;
  private final UcpListener ucxListener;
  private final int ucxPort;

  /** Where peers authenticate and ask for remote keys. */
  private final UcxControlPort control;

  /** The endpoints UCX's listener created for peers' connections. */
  private final UcxAcceptedEndpoints endpoints;

  private final Set<UcxSession> sessions = ConcurrentHashMap.newKeySet();
  private final Set<UcxConnection> connections = ConcurrentHashMap.newKeySet();
  private final boolean peerErrorHandling;
  private final boolean bySocketAddress;

  private final Lifecycle lifecycle = new Lifecycle();

  private UcxProvider(
      TransferConfig config,
      UcxProgressThread progress,
      ServerSocket listener,
      UcpListener ucxListener,
      byte[] workerAddress,
      boolean peerErrorHandling,
      boolean rdma) {
    this.config = config;
    this.peerErrorHandling = peerErrorHandling;
    this.bySocketAddress = peerErrorHandling && rdma;
    // UCX's verbs transports register every region writable, and the kernel will not pin a
    // read-only shared mapping for writing; a refused registration must not even be tried (see
    // registerFile).
    this.readOnlyMappings = !rdma;
    this.progress = progress;
    this.registrar = new UcxRegistrar(progress, config.readTimeout());
    this.ucxListener = ucxListener;
    this.ucxPort = ucxListener.getAddress().getPort();
    this.endpoints =
        new UcxAcceptedEndpoints(progress, peerErrorHandling, sessions, this::isClosed);
    this.control =
        new UcxControlPort(
            config,
            listener,
            ucxPort,
            workerAddress,
            registrar,
            sessions,
            this::sessionEnded,
            this::isClosed);
  }

  /** Loads UCX, starts the worker and the control listener; logs one line naming the choices. */
  static UcxProvider open(TransferConfig config) {
    UcxLibrary.load()
        .ifPresent(
            why -> {
              throw new TransferConfigException("provider=ucx cannot start: " + why);
            });
    UcxSettings settings = UcxSettings.of(config);
    if (settings.whyNoRdma().isEmpty()) {
      memlockProblem(MemlockLimit.read(MemlockLimit.PROC_SELF_LIMITS), config.registrationBudget())
          .ifPresent(
              why -> {
                throw new TransferConfigException("provider=ucx cannot start: " + why);
              });
    }
    int n = NODES.incrementAndGet();
    UcxProgressThread progress;
    try {
      progress = UcxProgressThread.start("memwire-ucx-progress-" + n, settings.values());
    } catch (IllegalStateException e) {
      throw new TransferConfigException(
          "provider=ucx: UCX did not start with "
              + settings.describe()
              + " (check "
              + TransportSettings.UCX_TRANSPORTS.name()
              + ", "
              + TransportSettings.DEVICE.name()
              + ", "
              + TransportSettings.UCX_CONFIG.name()
              + "): "
              + e.getMessage());
    }
    ServerSocket listener;
    try {
      listener = new ServerSocket();
      listener.setReuseAddress(true);
      listener.bind(new InetSocketAddress(config.resolveBindAddress(), config.port()), 128);
    } catch (IOException e) {
      progress.stop();
      throw new TransferConfigException(
          "provider=ucx: cannot listen on "
              + config.bindAddress()
              + ":"
              + config.port()
              + ": "
              + e);
    }
    // The provider answers the listener's connection requests; it exists only after the listener.
    AtomicReference<UcxProvider> self = new AtomicReference<>();
    UcpListener ucxListener;
    try {
      InetAddress bind = config.resolveBindAddress();
      ucxListener =
          progress.call(
              () -> {
                UcpListener l =
                    progress
                        .worker()
                        .newListener(
                            new UcpListenerParams()
                                .setSockAddr(new InetSocketAddress(bind, 0))
                                .setConnectionHandler(
                                    req -> {
                                      UcxProvider p = self.get();
                                      if (p == null) {
                                        req.reject();
                                      } else {
                                        p.endpoints.onConnectionRequest(req);
                                      }
                                    }));
                UcxResources.LISTENERS.incrementAndGet();
                return l;
              });
    } catch (RuntimeException e) {
      closeQuietly(listener);
      progress.stop();
      throw new TransferConfigException(
          "provider=ucx: UCX cannot listen on "
              + config.bindAddress()
              + " with "
              + settings.describe()
              + " (its connection manager needs rdma_cm on an RDMA device or its tcp transport): "
              + e.getMessage());
    }
    byte[] address =
        progress.call(
            () -> {
              ByteBuffer a = progress.worker().getAddress();
              byte[] b = new byte[a.remaining()];
              a.get(b);
              return b;
            });
    UcxProvider p =
        new UcxProvider(
            config,
            progress,
            listener,
            ucxListener,
            address,
            settings.peerErrorHandling(),
            settings.whyNoRdma().isEmpty());
    self.set(p);
    p.control.start();
    LOG.info(
        "ucx provider on {} (UCX endpoints connect to port {}): JUCX {}, UCX {} ({}), {};"
            + " transports and devices: {} ({}); peer failures seen by {}",
        p.localAddress(),
        p.ucxPort,
        UcxLibrary.jucxVersion(),
        UcxLibrary.ucxVersion(),
        UcxLibrary.libucpPath(),
        settings.whyNoRdma().map(w -> "no RDMA: " + w).orElse("RDMA available"),
        settings.describe(),
        settings.values().containsKey("TLS")
            ? "from " + TransportSettings.UCX_TRANSPORTS.name()
            : "UCX picks the fastest transport that reaches each peer",
        settings.peerErrorHandling()
            ? "UCX and the control connection"
            : "the control connection (UCX's shared-memory transports have no peer-failure"
                + " handling)");
    return p;
  }

  /**
   * Why registrations over RDMA could exceed the locked-memory limit: UCX pins what it registers
   * there, and a registration UCX refuses crashes the JVM under JUCX 1.15 (see {@link
   * #registerFile}) instead of failing it, so the budget must fit under the limit from the start.
   */
  static Optional<String> memlockProblem(Optional<MemlockLimit> memlock, long budget) {
    if (memlock.isEmpty() || memlock.get().allows(budget)) {
      return Optional.empty();
    }
    return Optional.of(
        "the locked-memory limit (ulimit -l) is "
            + memlock.get().describeSoft()
            + ", below "
            + TransportSettings.REGISTRATION_BUDGET.name()
            + "="
            + budget
            + " bytes, and UCX pins registered memory on RDMA devices; raise memlock"
            + " (limits.conf, systemd LimitMEMLOCK, container ulimits) or lower "
            + TransportSettings.REGISTRATION_BUDGET.name());
  }

  /** A control session ended: the endpoints accepted from its address may go too. */
  private void sessionEnded(UcxSession s) {
    sessions.remove(s);
    endpoints.sessionEnded(s.source());
  }

  /**
   * Whether this node's endpoints connect by socket address (UCX's rdma_cm): when UCX offers RDMA
   * transports here, since endpoints made from a worker address need a UD wire-up that rxe serves
   * only at some GID indexes. Over UCX's tcp and shared memory they are made from the peer's worker
   * address, the path the host suites run.
   */
  boolean connectsBySocketAddress() {
    return bySocketAddress;
  }

  boolean peerErrorHandling() {
    return peerErrorHandling;
  }

  UcxProgressThread progress() {
    return progress;
  }

  @Override
  public ProviderKind kind() {
    return ProviderKind.UCX;
  }

  @Override
  public InetSocketAddress localAddress() {
    return control.localAddress();
  }

  @Override
  public ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    if (file != null && remoteReadable) {
      return registerFile(buffer, address, null, file, fileOffset);
    }
    return registrar.register(buffer, address, remoteReadable);
  }

  /**
   * Memory UCX allocates ({@code memoryMap} with {@code allocate}): over its shared-memory
   * transports a peer reads it, and regions registered inside it, one-sided, with no CPU of this
   * process, where memory the node allocated is read only while this node's worker progresses (UCX
   * emulates the GET). Unregistered memory ({@code allocateDirect}) is such an allocation too, its
   * handle never served: its consumer registers slices of it.
   */
  @Override
  public Optional<ProviderAllocation> allocate(int length, boolean remoteReadable) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    UcxRegistrar.Region r = registrar.allocate(length, remoteReadable);
    if (r.address() % PAGE != 0) {
      // UCX maps whole pages; a heap fallback would not be aligned: give it back, use the node's.
      r.deregister(() -> registrar.freeAllocation(r));
      return Optional.empty();
    }
    ByteBuffer view = UcxUtils.getByteBufferView(r.address(), length);
    return Optional.of(
        new ProviderAllocation() {
          @Override
          public ByteBuffer memory() {
            return view;
          }

          @Override
          public long address() {
            return r.address();
          }

          @Override
          public ProviderRegistration registration() {
            return remoteReadable ? r : null;
          }

          @Override
          public void free() {
            registrar.freeAllocation(r);
          }
        });
  }

  private static final int PAGE = 4096;

  /**
   * Whether file regions are registered as the read-only mappings given: false where UCX offers
   * RDMA, and from the first refusal on.
   */
  private volatile boolean readOnlyMappings;

  /**
   * Registers a file region as its read-only mapping; where UCX cannot (its verbs transports
   * register every region writable, and the kernel will not pin a read-only shared mapping for
   * writing: EFAULT), through a read-write shared mapping of the same range, which nothing writes
   * through; where the file is not writable, as a private copy in direct memory. With RDMA the
   * read-only mapping is not even tried: JUCX 1.15 goes on to query the handle of a registration
   * UCX refused, which crashes the JVM (SIGSEGV in {@code ucp_mem_query}) instead of throwing.
   */
  @Override
  public ProviderRegistration registerFile(
      ByteBuffer mapping, long address, Path file, FileChannel channel, long fileOffset) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    RegistrationException readOnlyFailure = null;
    if (readOnlyMappings) {
      try {
        return registrar.register(mapping, address, true);
      } catch (RegistrationException e) {
        readOnlyFailure = e;
        readOnlyMappings = false;
        LOG.info(
            "ucx: UCX cannot register read-only file mappings here ({}): file regions are"
                + " registered through read-write shared mappings, or served from private copies"
                + " when a file is not writable",
            e.getMessage());
      }
    }
    int length = mapping.capacity();
    String why = "the file's path is unknown";
    if (file != null) {
      try {
        return registerSharedMapping(file, fileOffset, length);
      } catch (IOException | RegistrationException e) {
        why = e.toString();
      }
    }
    LOG.debug("ucx: file region of {} bytes registered as a private copy: {}", length, why);
    ByteBuffer copy = ByteBuffer.allocateDirect(length);
    copy.put(mapping.duplicate().clear()).clear();
    try {
      return registrar.register(copy, MemoryAccess.address(copy), true, () -> free(copy));
    } catch (RegistrationException e) {
      free(copy);
      if (readOnlyFailure != null) {
        e.addSuppressed(readOnlyFailure);
      }
      throw e;
    }
  }

  private ProviderRegistration registerSharedMapping(Path file, long fileOffset, int length)
      throws IOException {
    FileTime modified = Files.getLastModifiedTime(file);
    MappedByteBuffer shared;
    try (FileChannel rw =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      shared = rw.map(FileChannel.MapMode.READ_WRITE, fileOffset, length);
    }
    try {
      ProviderRegistration r =
          registrar.register(shared, MemoryAccess.address(shared), true, () -> free(shared));
      // Pinning takes write faults, which stamp the file's mtime though no byte changes.
      if (!Files.getLastModifiedTime(file).equals(modified)) {
        Files.setLastModifiedTime(file, modified);
      }
      return r;
    } catch (RegistrationException e) {
      free(shared);
      throw e;
    }
  }

  private static void free(ByteBuffer b) {
    MemoryAccess.free(b);
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (isClosed()) {
      throw new io.memwire.transfer.TransferConnectionException(
          "the ucx provider is closed", peer, null);
    }
    UcxConnection c =
        UcxConnection.open(
            this, peer, (int) config.connectTimeout().toMillis(), config.authSecret().orElse(null));
    connections.add(c);
    if (isClosed()) {
      c.close();
    }
    return c;
  }

  void forget(UcxConnection c) {
    connections.remove(c);
  }

  private boolean isClosed() {
    return !lifecycle.isOpen();
  }

  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      return; // closed, or being closed by another thread
    }
    try {
      closeBody();
    } finally {
      lifecycle.closed();
    }
  }

  private void closeBody() {
    control.close();
    for (UcxConnection c : new ArrayList<>(connections)) {
      c.close();
    }
    // Each connection's quiesce is queued on the progress thread; these run after them.
    if (progress.isAlive()) {
      progress.call(
          () -> {
            endpoints.closeAll();
            ucxListener.close();
            UcxResources.LISTENERS.decrementAndGet();
            return null;
          });
    }
    registrar.closeAll();
    progress.stop();
    LOG.debug("ucx provider closed; UCX objects live in this process: {}", UcxResources.describe());
  }

  private static void closeQuietly(ServerSocket s) {
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing the ucx control listener", e);
    }
  }
}
