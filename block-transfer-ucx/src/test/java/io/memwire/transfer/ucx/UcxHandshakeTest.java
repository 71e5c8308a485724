package io.memwire.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The control port's handshakes cannot be held by peers without the secret: each must end within
 * {@code connectTimeout} from its accept, however slowly its bytes come, and peers at one address
 * that keep the handshake cap full cannot push out a peer authenticating from another. Loopback
 * only; bounded in connections held and time.
 */
class UcxHandshakeTest {
  private static final byte[] SECRET = "a shared secret".getBytes(StandardCharsets.UTF_8);

  @BeforeAll
  static void ucxLoads() {
    UcxTestSupport.assumeUcx();
  }

  private static TransferNode server(Duration connectTimeout) {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(ProviderKind.UCX)
            .bindAddress("127.0.0.1")
            .set("ucxTransports", "tcp")
            .set("ucxConfig", "NET_DEVICES=lo")
            .authSecret(SECRET)
            .connectTimeout(connectTimeout)
            .maxConnections(256) // a handshake cap of 16
            .build());
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void aHelloSentAByteAtATimeIsClosedAtTheHandshakesDeadline() throws Exception {
    try (TransferNode server = server(Duration.ofSeconds(1));
        Socket s = new Socket()) {
      s.connect(server.localAddress(), 5_000);
      s.setSoTimeout(200);
      byte[] hello = hello(UcxControl.nonce());
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      int sent = 0;
      int answer = 0;
      // A byte every 300 ms: each read of the server's sees a byte within a per-read timeout of
      // 1 s, so only a deadline for the whole handshake closes this peer.
      while (sent < hello.length && answer == 0) {
        try {
          out.write(hello[sent]);
          out.flush();
          sent++;
        } catch (IOException closed) {
          answer = -1;
          break;
        }
        try {
          answer = in.read() < 0 ? -1 : 1;
        } catch (java.net.SocketTimeoutException quiet) {
          answer = 0;
        } catch (IOException reset) {
          answer = -1;
        }
      }
      if (answer == 0) {
        s.setSoTimeout(30_000);
        answer = readOrClosed(in);
      }
      assertEquals(-1, answer, "the server answered a HELLO that took " + sent + " x 200 ms");
      assertTrue(sent < hello.length, "the whole HELLO went through: " + sent + " bytes");
    }
  }

  @Test
  @Timeout(value = 180, unit = TimeUnit.SECONDS)
  void churnersAtOneAddressCannotPushOutAPeerAuthenticatingFromAnother() throws Exception {
    try (TransferNode server = server(Duration.ofSeconds(20));
        Churner churner = new Churner(server.localAddress(), 64, Duration.ofSeconds(150))) {
      churner.start();
      // Its 64 connections keep the cap of 16 full: at least one round of evictions each.
      long start = churner.connects.get();
      io.memwire.transfer.testing.Await.until(
          "the churners fill the handshake cap",
          Duration.ofSeconds(60),
          () -> churner.connects.get() - start >= 200);
      int in = 0;
      int paused = 0;
      for (int i = 0; i < 20; i++) {
        in += authenticate(server.localAddress(), 0) ? 1 : 0;
        paused += authenticate(server.localAddress(), 3) ? 1 : 0;
      }
      assertTrue(
          in == 20 && paused == 20,
          "got in "
              + in
              + " of 20 times at once and "
              + paused
              + " of 20 after a 3 ms pause, with "
              + churner.connects.get()
              + " churning connections");
    }
  }

  private static byte[] hello(byte[] clientNonce) throws IOException {
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(b);
    d.writeInt(UcxControl.MAGIC);
    d.writeShort(UcxControl.VERSION);
    d.writeShort(0);
    d.write(clientNonce);
    return b.toByteArray();
  }

  /** -1 when the server closed the connection, 1 when it sent a byte. */
  private static int readOrClosed(InputStream in) {
    try {
      return in.read() < 0 ? -1 : 1;
    } catch (IOException e) {
      return -1;
    }
  }

  /** One handshake from 127.0.0.1 with the secret; true when the WELCOME says ok. */
  private static boolean authenticate(InetSocketAddress server, long pauseMs) throws Exception {
    try (Socket s = new Socket()) {
      s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      s.connect(server, 5_000);
      s.setSoTimeout(30_000);
      byte[] clientNonce = UcxControl.nonce();
      s.getOutputStream().write(hello(clientNonce));
      DataInputStream in = new DataInputStream(s.getInputStream());
      in.readInt();
      in.readShort();
      if (in.readByte() != UcxControl.STATUS_OK || in.readByte() != 1) {
        return false;
      }
      byte[] serverNonce = new byte[16];
      in.readFully(serverNonce);
      in.readFully(new byte[32]);
      if (pauseMs > 0) {
        // The peer's own think time, the thing under test; not a wait for the server.
        Thread.sleep(pauseMs);
      }
      s.getOutputStream().write(UcxControl.proof(SECRET, "client", clientNonce, serverNonce));
      in.readInt();
      return in.readByte() == UcxControl.STATUS_OK;
    } catch (IOException e) {
      return false; // closed by the server before the WELCOME
    }
  }

  /**
   * Holds connections from 127.0.0.2 that never authenticate (half send a HELLO, half nothing),
   * replacing each the server closes; stops when closed or past its deadline.
   */
  private static final class Churner implements AutoCloseable {
    final AtomicLong connects = new AtomicLong();
    private final InetSocketAddress server;
    private final long deadline;
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stop;

    Churner(InetSocketAddress server, int held, Duration limit) {
      this.server = server;
      this.deadline = System.nanoTime() + limit.toNanos();
      AtomicInteger n = new AtomicInteger();
      for (int i = 0; i < held; i++) {
        Thread t = new Thread(this::hold, "ucx-churner-" + n.incrementAndGet());
        t.setDaemon(true);
        threads.add(t);
      }
    }

    void start() {
      threads.forEach(Thread::start);
    }

    private void hold() {
      boolean sendHello = Thread.currentThread().getName().hashCode() % 2 == 0;
      while (!stop && System.nanoTime() - deadline < 0) {
        try (Socket s = new Socket()) {
          s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
          s.connect(server, 5_000);
          connects.incrementAndGet();
          if (sendHello) {
            s.getOutputStream().write(hello(UcxControl.nonce()));
          }
          s.setSoTimeout(1_000);
          InputStream in = s.getInputStream();
          while (!stop && System.nanoTime() - deadline < 0) {
            try {
              if (in.read(new byte[64]) < 0) {
                break; // evicted: reconnect
              }
            } catch (java.net.SocketTimeoutException stillOpen) {
              // held open, as the attack needs
            }
          }
        } catch (IOException e) {
          // refused or reset: reconnect
        }
      }
    }

    @Override
    public void close() throws InterruptedException {
      stop = true;
      for (Thread t : threads) {
        t.join(10_000);
      }
    }
  }
}
