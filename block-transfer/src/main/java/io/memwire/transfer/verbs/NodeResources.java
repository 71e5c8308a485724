package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.settings.TransportSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a verbs node opens as it starts, in this order: the authentication socket (with a secret),
 * the RDMA CM event channel and the listening id on the node's address, the handshake socket
 * without a secret (where it can be bound: it only tells peers this node's MTUs), the device
 * context, the protection domain, and the completion queues with the first one open. When a step
 * fails, everything opened before it is freed and the failure thrown; once open, the provider and
 * its parts own and free these.
 */
final class NodeResources {
  // The provider's logger name, so these messages read as the provider's.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /**
   * The bound handshake socket: authentication with a secret; without one the open handshake (the
   * port's MTUs only), or null when it could not be bound or the device is iWARP.
   */
  final ServerSocket authSocket;

  /** The node's port: the same number in TCP (authentication) and in the RDMA CM port space. */
  final int port;

  final RdmaEventChannel serverChannel;
  final RdmaCmId listenId;
  final InetSocketAddress localAddress;
  final IbvContext context;
  final IbvPd pd;
  final CompletionQueues<CompletionThread> queues;

  private NodeResources(
      ServerSocket authSocket,
      int port,
      RdmaEventChannel serverChannel,
      RdmaCmId listenId,
      InetSocketAddress localAddress,
      IbvContext context,
      IbvPd pd,
      CompletionQueues<CompletionThread> queues) {
    this.authSocket = authSocket;
    this.port = port;
    this.serverChannel = serverChannel;
    this.listenId = listenId;
    this.localAddress = localAddress;
    this.context = context;
    this.pd = pd;
    this.queues = queues;
  }

  /**
   * Opens them all for {@code binding}; {@code withAuth} binds the authentication socket (else
   * {@code openHandshake} tries to bind the open one on the same port), and {@code newQueues} makes
   * the completion queues for the device's context.
   */
  static NodeResources open(
      TransferConfig config,
      VerbsProbe.Binding binding,
      boolean withAuth,
      boolean openHandshake,
      Function<IbvContext, CompletionQueues<CompletionThread>> newQueues)
      throws IOException {
    // With a secret, peers authenticate over TCP on the node's port before their RDMA CM
    // connect request (same number, separate port space); bound first so port 0 picks one free
    // in both.
    ServerSocket authSocket = withAuth ? bindAuthSocket(config, binding) : null;
    int port = authSocket != null ? authSocket.getLocalPort() : config.port();
    RdmaEventChannel channel = null;
    try {
      channel = RdmaEventChannel.createEventChannel();
    } finally {
      if (channel == null && authSocket != null) {
        authSocket.close();
      }
    }
    if (channel == null) {
      throw new IOException("rdma_create_event_channel failed (is rdma_ucm loaded?)");
    }
    RdmaCmId listen = null;
    IbvPd pd = null;
    CompletionQueues<CompletionThread> cq = null;
    try {
      listen = channel.createId(RdmaCm.RDMA_PS_TCP);
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
                + "); check "
                + TransportSettings.BIND_ADDRESS.name()
                + ", "
                + FabricSettings.DEVICE.name()
                + " and "
                + TransportSettings.PORT.name(),
            e);
      }
      SocketAddress bound = listen.getSource();
      InetSocketAddress localAddress =
          bound instanceof InetSocketAddress && ((InetSocketAddress) bound).getPort() > 0
              ? new InetSocketAddress(binding.address(), ((InetSocketAddress) bound).getPort())
              : want;
      IbvContext context = listen.getVerbs();
      if (context == null) {
        throw new TransferConfigException(
            TransferConfig.BIND_ADDRESS
                + "="
                + binding.address().getHostAddress()
                + " is not served by an RDMA device according "
                + "to rdma_cm");
      }
      pd = context.allocPd();
      cq = newQueues.apply(context);
      cq.openFirst();
      if (authSocket == null && openHandshake) {
        authSocket = bindOpenSocket(localAddress);
      }
      return new NodeResources(authSocket, port, channel, listen, localAddress, context, pd, cq);
    } catch (IOException | RuntimeException e) {
      if (authSocket != null) {
        authSocket.close();
      }
      if (cq != null) {
        cq.close();
      }
      CmSupport.deallocQuietly(pd);
      CmSupport.destroyQuietly(listen);
      try {
        channel.destroyEventChannel();
      } catch (IOException ignored) {
        // nothing more to free
      }
      throw e;
    }
  }

  /**
   * The open handshake's socket on the RDMA CM port's number in TCP, or null (logged) when it is
   * taken: the node runs, and peers connecting to it cannot check its MTU before they connect.
   */
  private static ServerSocket bindOpenSocket(InetSocketAddress at) throws IOException {
    ServerSocket s = ServerSocketChannel.open().socket();
    try {
      s.bind(at, 128);
      return s;
    } catch (IOException e) {
      s.close();
      LOG.warn(
          "cannot listen on TCP {}:{} ({}): peers connecting to this verbs node cannot learn its"
              + " MTU before they connect, so an MTU mismatch shows only as stalled reads",
          at.getAddress().getHostAddress(),
          at.getPort(),
          e.getMessage());
      return null;
    }
  }

  private static ServerSocket bindAuthSocket(TransferConfig config, VerbsProbe.Binding binding)
      throws IOException {
    // Through a channel: VerbsAuth serves it from a selector.
    ServerSocket authSocket = ServerSocketChannel.open().socket();
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
    return authSocket;
  }
}
