package io.memwire.transfer.ucx;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.verbs.MemlockLimit;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.openucx.jucx.ucp.UcpListener;
import org.openucx.jucx.ucp.UcpListenerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a node's {@link UcxProvider} starts, in order: UCX loaded (its environment checked), over
 * RDMA the registration budget checked against the memlock limit, the progress thread with the
 * context and worker, the TCP control listener on the node's port, the UCX listener on an ephemeral
 * port, then the provider, which starts accepting peers. Whatever fails on the way is stopped again
 * and the start fails naming the settings to check.
 */
final class UcxStart {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);
  private static final AtomicInteger NODES = new AtomicInteger();

  private UcxStart() {}

  /**
   * Loads UCX, starts the worker, the control listener and the UCX listener, then the provider;
   * logs one line naming the choices.
   *
   * @throws TransferConfigException naming the settings to check, after undoing what had started
   */
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
              + FabricSettings.UCX_TRANSPORTS.name()
              + ", "
              + FabricSettings.DEVICE.name()
              + ", "
              + FabricSettings.UCX_CONFIG.name()
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
                                        p.onConnectionRequest(req);
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
    p.startControl();
    LOG.info(
        "ucx provider on {} (UCX endpoints connect to port {}): JUCX {}, UCX {} ({}), {};"
            + " transports and devices: {} ({}); peer failures seen by {}",
        p.localAddress(),
        p.ucxPort(),
        UcxLibrary.jucxVersion(),
        UcxLibrary.ucxVersion(),
        UcxLibrary.libucpPath(),
        settings.whyNoRdma().map(w -> "no RDMA: " + w).orElse("RDMA available"),
        settings.describe(),
        settings.values().containsKey("TLS")
            ? "from " + FabricSettings.UCX_TRANSPORTS.name()
            : "UCX picks the fastest transport that reaches each peer",
        settings.peerErrorHandling()
            ? "UCX and the control connection"
            : "the control connection (UCX's shared-memory transports have no peer-failure"
                + " handling)");
    return p;
  }

  private static void closeQuietly(ServerSocket s) {
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing the ucx control listener", e);
    }
  }
}
