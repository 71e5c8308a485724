package io.memwire.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A session's {@code GONE}s are written by a thread of the session, never by the thread closing a
 * region: a peer that stops reading fills the socket, and the closing thread must not wait for it.
 * Plain sockets on loopback; UCX is not loaded.
 */
class UcxSessionTest {
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void tellGoneReturnsAtOnceWhenThePeerStopsReadingAndCloseEndsTheWriter() throws Exception {
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket peer = new Socket()) {
      peer.setReceiveBufferSize(4096);
      peer.connect(listener.getLocalSocketAddress(), 5_000);
      Socket accepted = listener.accept();
      accepted.setSendBufferSize(4096);
      AtomicBoolean ended = new AtomicBoolean();
      UcxSession session =
          new UcxSession(accepted, null, 4242, new byte[] {7}, null, 5_000, s -> ended.set(true));
      Thread t = new Thread(session, "test-ucx-session");
      t.setDaemon(true);
      t.start();

      DataOutputStream out = new DataOutputStream(peer.getOutputStream());
      out.writeInt(UcxControl.MAGIC);
      out.writeShort(UcxControl.VERSION);
      out.writeShort(0);
      out.write(UcxControl.nonce());
      out.flush();
      DataInputStream in = new DataInputStream(peer.getInputStream());
      in.readFully(new byte[56]); // CHALLENGE
      assertEquals(UcxControl.MAGIC, in.readInt());
      assertEquals(UcxControl.STATUS_OK, in.readByte());
      in.readFully(new byte[3]);
      assertEquals(4242, in.readUnsignedShort());
      assertEquals(1, in.readInt());
      assertEquals(7, in.readByte());
      // From here the peer reads nothing: 200,000 GONEs (1.8 MB) overflow both 4 KiB buffers.

      List<CompletableFuture<Void>> acks = new ArrayList<>();
      long start = System.nanoTime();
      for (long h = 0; h < 200_000; h++) {
        acks.add(session.tellGone(h));
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(ms < 20_000, "200,000 tellGone calls took " + ms + " ms");
      assertTrue(acks.stream().noneMatch(CompletableFuture::isDone), "no ack came, none is done");

      session.close(); // what an ack timeout does: the blocked write ends with the socket
      assertTrue(ended.get());
      assertTrue(acks.stream().allMatch(CompletableFuture::isDone), "close completes every ack");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (goneWriters() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(0, goneWriters(), "the GONE writer ended with the session");
      t.join(10_000);
      assertTrue(!t.isAlive(), "the session's thread ended");
    }
  }

  private static long goneWriters() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(x -> x.getName().startsWith("memwire-ucx-gone-") && x.isAlive())
        .count();
  }
}
