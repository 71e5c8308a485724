package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.testing.Await;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Peers without the secret that hold the handshake cap full and reconnect as fast as they are
 * dropped cannot keep out a peer that authenticates, even one that pauses before its proof as a
 * peer a few milliseconds away would. Loopback only: the churners connect from 127.0.0.2, the
 * honest peer from 127.0.0.1; bounded in connections held (64) and time.
 */
class TcpHandshakeChurnTest {
  private static final byte[] SECRET = "a shared secret".getBytes(StandardCharsets.UTF_8);
  private static final int HELD = 64;
  private static final int TRIES = 40;

  @Test
  @Timeout(value = 180, unit = TimeUnit.SECONDS)
  void churningUnauthenticatedHandshakesCannotPushAnAuthenticatingPeerOut() throws Exception {
    // maxConnections 256: a handshake cap of 16, so the 64 churners keep it full.
    TransferConfig config =
        TransferConfig.builder()
            .provider(ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .authSecret(SECRET)
            .maxConnections(256)
            .build();
    try (TransferNode server = TransferNode.start(config);
        Churner churner = new Churner(server.localAddress(), Duration.ofSeconds(150))) {
      churner.start();
      Await.until(
          "the churners fill the handshake cap",
          Duration.ofSeconds(30),
          () -> evicted(server) >= 2_000);
      long evictedBefore = evicted(server);
      long connectsBefore = churner.connects.get();
      int[] in = new int[2];
      for (int i = 0; i < TRIES; i++) {
        in[0] += authenticate(server, 0) == Handshake.STATUS_OK ? 1 : 0;
        in[1] += authenticate(server, 3) == Handshake.STATUS_OK ? 1 : 0;
      }
      long churned = evicted(server) - evictedBefore;
      long connects = churner.connects.get() - connectsBefore;
      assertTrue(churned >= TRIES, "the churners kept evicting meanwhile: " + churned);
      assertTrue(
          in[0] == TRIES && in[1] == TRIES,
          "got in "
              + in[0]
              + " of "
              + TRIES
              + " times at once and "
              + in[1]
              + " of "
              + TRIES
              + " times after a 3 ms pause ("
              + connects
              + " churning connections, "
              + churned
              + " handshakes evicted meanwhile)");
    }
  }

  private static long evicted(TransferNode n) {
    return n.stats().asMap().get("handshakesEvicted");
  }

  /**
   * One authenticated handshake from 127.0.0.1, pausing {@code pauseMs} between the CHALLENGE and
   * its proof; returns the WELCOME status, or -1 when the server closed the connection first.
   */
  private static int authenticate(TransferNode server, long pauseMs) throws Exception {
    try (Socket s = new Socket()) {
      s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      s.connect(server.localAddress(), 5_000);
      s.setSoTimeout(20_000);
      byte[] clientNonce = Handshake.nonce();
      s.getOutputStream().write(Handshake.hello(true, clientNonce).array());
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
      in.readFully(challenge);
      ByteBuffer c = ByteBuffer.wrap(challenge);
      c.getInt();
      c.getShort();
      byte status = c.get();
      if (status != Handshake.STATUS_OK) {
        return status;
      }
      c.get();
      byte[] serverNonce = new byte[Handshake.NONCE_SIZE];
      c.get(serverNonce);
      if (pauseMs > 0) {
        // The peer's own think time, the thing under test; not a wait for the server.
        Thread.sleep(pauseMs);
      }
      s.getOutputStream().write(Handshake.clientProof(SECRET, serverNonce, clientNonce));
      byte[] welcome = new byte[Handshake.WELCOME_SIZE];
      in.readFully(welcome);
      return welcome[4];
    } catch (IOException e) {
      return -1; // closed by the server before the WELCOME
    }
  }

  /**
   * Holds {@link #HELD} connections from 127.0.0.2 open, never authenticating (half send a HELLO,
   * half nothing), and reconnects each as soon as the server drops it; stops when closed or past
   * its deadline.
   */
  private static final class Churner implements AutoCloseable, Runnable {
    final AtomicLong connects = new AtomicLong();
    private final InetSocketAddress server;
    private final long deadline;
    private final Selector selector;
    private final Thread thread = new Thread(this, "handshake-churner");
    private final List<SocketChannel> open = new ArrayList<>();
    private volatile boolean stop;
    private volatile Throwable failure;

    Churner(InetSocketAddress server, Duration limit) throws IOException {
      this.server = server;
      this.deadline = System.nanoTime() + limit.toNanos();
      this.selector = Selector.open();
      thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    @Override
    public void run() {
      ByteBuffer scratch = ByteBuffer.allocate(256);
      try {
        for (int i = 0; i < HELD; i++) {
          connect(i % 2 == 0);
        }
        while (!stop && System.nanoTime() - deadline < 0) {
          selector.select(100);
          for (SelectionKey k : selector.selectedKeys()) {
            SocketChannel ch = (SocketChannel) k.channel();
            boolean sendHello = (Boolean) k.attachment();
            boolean dropped;
            try {
              if (k.isConnectable()) {
                ch.finishConnect();
                if (sendHello) {
                  ch.write(Handshake.hello(true, Handshake.nonce()));
                }
                k.interestOps(SelectionKey.OP_READ);
                dropped = false;
              } else {
                scratch.clear();
                dropped = ch.read(scratch) < 0;
              }
            } catch (IOException e) {
              dropped = true;
            }
            if (dropped) {
              k.cancel();
              ch.close();
              open.remove(ch);
              connect(sendHello);
            }
          }
          selector.selectedKeys().clear();
        }
      } catch (Throwable t) {
        failure = t;
      }
    }

    private void connect(boolean sendHello) throws IOException {
      SocketChannel ch = SocketChannel.open();
      open.add(ch);
      ch.configureBlocking(false);
      ch.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
      connects.incrementAndGet();
      if (ch.connect(server)) {
        if (sendHello) {
          ch.write(Handshake.hello(true, Handshake.nonce()));
        }
        ch.register(selector, SelectionKey.OP_READ, sendHello);
      } else {
        ch.register(selector, SelectionKey.OP_CONNECT, sendHello);
      }
    }

    @Override
    public void close() throws Exception {
      stop = true;
      selector.wakeup();
      thread.join(10_000);
      assertTrue(!thread.isAlive(), "churner stopped");
      for (SocketChannel ch : open) {
        ch.close();
      }
      selector.close();
      if (failure != null) {
        throw new AssertionError("churner failed", failure);
      }
    }
  }
}
