package io.memwire.transfer.ucx;

import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.spi.ProviderAllocation;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpConnectionRequest;
import org.openucx.jucx.ucp.UcpListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ucx provider: one UCX context and worker per node on {@link UcxProgressThread}, a TCP control
 * listener on the node's port (authentication, the UCX listener's port, remote keys: {@link
 * UcxControl}), a UCX listener on an ephemeral port that authenticated peers connect endpoints to
 * (rdma_cm on RDMA devices), and one-sided GETs by UCX endpoints ({@link UcxConnection}). Started,
 * in order, by {@link UcxStart}.
 */
public final class UcxProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);

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

  UcxProvider(
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

  /** Starts serving peers: the control port accepts (called once, when the node is started). */
  void startControl() {
    control.start();
  }

  /** The UCX listener's port, which authenticated peers connect endpoints to. */
  int ucxPort() {
    return ucxPort;
  }

  /** A peer connects an endpoint to the UCX listener (progress thread). */
  void onConnectionRequest(UcpConnectionRequest req) {
    endpoints.onConnectionRequest(req);
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
}
