package io.memwire.shuffle.protocol;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.RemoteRegion;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A reducer's RESOLVE request ({@link ServiceProtocol}): asks the shuffle service on the node a
 * directory pointer names for the pointer that replaced it after the service restarted, proving
 * with an HMAC of the application's token that it may ask. One request per TCP connection; a
 * service that is not there yet (restarting, recovering) is tried again until the deadline.
 */
public final class ResolveClient {
  /** What the HMAC covers first, so a MAC of this request is never one of another protocol. */
  private static final byte[] MAC_CONTEXT = "memwire-resolve-1".getBytes(StandardCharsets.US_ASCII);

  /** Bytes of the HMAC closing a RESOLVE frame. */
  public static final int MAC_BYTES = 32;

  /** First pause after a refused connect; it doubles up to {@link #MAX_RETRY_MILLIS}. */
  static final long FIRST_RETRY_MILLIS = 100;

  /**
   * Longest pause between connects: a node where nothing listens on the port (a service without
   * resolvePort) costs a few dozen connects per pointer over the timeout, not hundreds.
   */
  static final long MAX_RETRY_MILLIS = 2_000;

  private ResolveClient() {}

  /**
   * The pointer that replaced {@code old}, from the service at {@code service}.
   *
   * @param application the application's id as its executors register it
   * @param token the application's token (never sent: only a MAC made with it)
   * @param timeout how long to try in all (connects refused meanwhile are tried again, with a
   *     capped back-off, {@link #pauseAfter})
   * @throws ServiceException when the service refuses (unknown pointer, not authenticated)
   * @throws IOException when no answer came within {@code timeout}
   */
  public static DirectoryPointer resolve(
      InetSocketAddress service,
      String application,
      byte[] token,
      int shuffleId,
      DirectoryPointer old,
      Duration timeout)
      throws IOException {
    ServiceProtocol.Out req = request(application, token, shuffleId, old);
    long deadline = System.nanoTime() + timeout.toNanos();
    IOException last = null;
    long pause = 0;
    while (true) {
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw new IOException(
            "no answer from the shuffle service at " + service + " within " + timeout, last);
      }
      try (Socket s = new Socket()) {
        s.connect(service, (int) Math.min(left, Integer.MAX_VALUE));
        s.setSoTimeout((int) Math.max(1, Math.min(left, Integer.MAX_VALUE)));
        return exchange(s, req);
      } catch (ServiceException e) {
        throw e;
      } catch (SocketTimeoutException e) {
        throw new IOException("the shuffle service at " + service + " did not answer in time", e);
      } catch (IOException e) {
        last = e; // not listening yet (restarting or recovering): try again
      }
      pause = pauseAfter(pause);
      long leftNow = (deadline - System.nanoTime()) / 1_000_000;
      try {
        // Never sleep past the deadline: the last connect gets the time that is left.
        Thread.sleep(Math.max(1, Math.min(pause, leftNow)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while resolving a pointer", e);
      }
    }
  }

  /** The pause before the next connect, after one of {@code pause} ms (0: the first). */
  static long pauseAfter(long pause) {
    return pause <= 0 ? FIRST_RETRY_MILLIS : Math.min(pause * 2, MAX_RETRY_MILLIS);
  }

  /** The RESOLVE frame for {@code old}, its MAC made with {@code token}. */
  public static ServiceProtocol.Out request(
      String application, byte[] token, int shuffleId, DirectoryPointer old) {
    ServiceProtocol.Out body =
        new ServiceProtocol.Out(ServiceProtocol.RESOLVE)
            .u16(ServiceProtocol.VERSION)
            .str(application)
            .i32(shuffleId)
            .i32(old.chunk())
            .bytes(old.region().toBytes());
    ByteBuffer signed = body.frame().position(5);
    return body.raw(mac(token, signed));
  }

  /** The HMAC of a RESOLVE body ({@code signed}: from version to before the MAC) under a token. */
  public static byte[] mac(byte[] token, ByteBuffer signed) {
    try {
      Mac m = Mac.getInstance("HmacSHA256");
      m.init(new SecretKeySpec(token, "HmacSHA256"));
      m.update(MAC_CONTEXT);
      m.update(signed.duplicate());
      return m.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  private static DirectoryPointer exchange(Socket s, ServiceProtocol.Out req) throws IOException {
    ByteBuffer f = req.frame();
    byte[] out = new byte[f.remaining()];
    f.get(out);
    OutputStream os = s.getOutputStream();
    os.write(out);
    os.flush();
    DataInputStream in = new DataInputStream(s.getInputStream());
    int length = ServiceProtocol.checkLength(in.readInt());
    byte type = in.readByte();
    byte[] body = new byte[length - 1];
    in.readFully(body);
    ServiceProtocol.In r = new ServiceProtocol.In(type, ByteBuffer.wrap(body));
    if (type == ServiceProtocol.ERROR) {
      int code = r.u8();
      throw new ServiceException(code, r.str());
    }
    if (type != ServiceProtocol.OK) {
      throw new IOException("unexpected answer type " + type + " to RESOLVE");
    }
    int chunk = r.i32();
    int entries = r.i32();
    int layout = r.u8();
    try {
      return ServiceClient.pointer(chunk, entries, layout, RemoteRegion.decode(r.rest()));
    } catch (IllegalArgumentException e) {
      throw new IOException("malformed RESOLVE answer: " + e.getMessage(), e);
    }
  }
}
