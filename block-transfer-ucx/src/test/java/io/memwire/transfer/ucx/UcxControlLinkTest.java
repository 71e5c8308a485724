package io.memwire.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.testing.Await;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The connecting side's control frames are written by the link's own thread, never by the thread
 * asking (the progress thread): a peer that stops reading fills the socket, and the progress
 * thread, which every GET of the node completes on, must not wait for it. Plain sockets on
 * loopback; UCX is not loaded.
 */
class UcxControlLinkTest {
  @Test // in a thread of its own: a write blocked on a full socket ignores interrupts
  @Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void askingReturnsAtOnceWhenThePeerStopsReadingAndCloseEndsTheWriter() throws Exception {
    try (ServerSocket listener = new ServerSocket()) {
      listener.setReceiveBufferSize(4096); // accepted sockets inherit it
      listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
      CompletableFuture<Socket> accepted = new CompletableFuture<>();
      Thread peer =
          new Thread(
              () -> {
                try {
                  Socket s = listener.accept();
                  welcome(s);
                  accepted.complete(s);
                } catch (IOException | RuntimeException e) {
                  accepted.completeExceptionally(e);
                }
              },
              "test-ucx-peer");
      peer.setDaemon(true);
      peer.start();

      UcxControlLink link =
          UcxControlLink.connect((InetSocketAddress) listener.getLocalSocketAddress(), 5_000, null);
      assertEquals(4242, link.welcome().ucxPort());
      assertArrayEquals(new byte[] {7}, link.welcome().workerAddress());
      AtomicReference<String> ended = new AtomicReference<>();
      link.start(
          new UcxControlLink.Listener() {
            @Override
            public void onKeys(List<UcxControlLink.KeyReply> replies) {}

            @Override
            public void onGone(long handle) {}

            @Override
            public void onEnd(String what, IOException cause) {
              ended.compareAndSet(null, what);
            }
          });
      try (Socket s = accepted.get(10, TimeUnit.SECONDS)) {
        // The frames as the wire format has them, in the order asked.
        link.askKeys(List.of(11L, 12L));
        link.ackGone(13L);
        DataInputStream in = new DataInputStream(s.getInputStream());
        assertEquals(UcxControl.KEYS, in.readByte());
        assertEquals(2, in.readUnsignedShort());
        assertEquals(11L, in.readLong());
        assertEquals(12L, in.readLong());
        assertEquals(UcxControl.GONE_ACK, in.readByte());
        assertEquals(13L, in.readLong());

        // From here the peer reads nothing: 16 MiB of KEYS overflow both sockets' buffers.
        List<Long> handles = new ArrayList<>();
        for (long h = 0; h < 2 << 20; h++) {
          handles.add(h);
        }
        long start = System.nanoTime();
        link.askKeys(handles);
        for (long h = 0; h < 100_000; h++) {
          link.ackGone(h);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms < 20_000, "asking for 2 Mi keys took " + ms + " ms");

        link.close(); // what the connection's quiesce does: the blocked write ends with the socket
        Await.until(
            "the control link's threads end", Duration.ofSeconds(10), () -> linkThreads() == 0);
        assertEquals(null, ended.get(), "a link closed here reports no failure");
      }
    }
  }

  /** The accepting side's handshake, without a secret: CHALLENGE, then WELCOME. */
  private static void welcome(Socket s) throws IOException {
    DataInputStream in = new DataInputStream(s.getInputStream());
    in.readFully(new byte[24]); // HELLO
    DataOutputStream out = new DataOutputStream(s.getOutputStream());
    out.writeInt(UcxControl.MAGIC);
    out.writeShort(UcxControl.VERSION);
    out.writeByte(UcxControl.STATUS_OK);
    out.writeByte(0);
    out.write(UcxControl.nonce());
    out.write(new byte[32]);
    UcxControl.writeWelcome(out, UcxControl.STATUS_OK, 4242, new byte[] {7});
  }

  private static long linkThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(x -> x.getName().startsWith("memwire-ucx-control-") && x.isAlive())
        .count();
  }
}
