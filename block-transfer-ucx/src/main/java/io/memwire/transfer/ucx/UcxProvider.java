package io.memwire.transfer.ucx;

import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
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
import java.nio.channels.FileChannel;
import java.nio.file.Path;
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
  private final UcxFileRegions fileRegions;

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
    this.progress = progress;
    this.registrar = new UcxRegistrar(progress, config.readTimeout());
    this.fileRegions = new UcxFileRegions(registrar, rdma);
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
      // UCX pins what it registers over RDMA, and a pin it refuses kills the JVM under JUCX 1.15
      // (see UcxFileRegions), so the budget must fit under the limit from the start.
      MemlockLimit.budgetProblem(
              MemlockLimit.read(MemlockLimit.PROC_SELF_LIMITS), config.registrationBudget())
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
   * Registers a file region through {@link UcxFileRegions}: the read-only mapping given where UCX
   * can register it, else a read-write shared mapping of the same range or a private copy.
   */
  @Override
  public ProviderRegistration registerFile(
      ByteBuffer mapping, long address, Path file, FileChannel channel, long fileOffset) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    return fileRegions.register(mapping, address, file, fileOffset);
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
    int leftMapped = registrar.closeAll();
    progress.stop(leftMapped > 0);
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
