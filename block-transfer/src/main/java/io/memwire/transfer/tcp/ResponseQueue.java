package io.memwire.transfer.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.function.LongConsumer;

/**
 * The responses one {@link ResponderSession} has queued, in request order, and their writing to the
 * socket: runs of memory (or mapped-file) bodies go out in one gathering write, file bodies taken
 * by sendfile ({@link FileChannel#transferTo}) one at a time. Each response pins its region until
 * its last byte is written or the queue is {@linkplain #releaseAll released}.
 *
 * <p>Loop-confined, like its session: only the session's event-loop thread touches it.
 */
final class ResponseQueue {
  /** Buffers per gathering write (a header and a body per response). */
  private static final int GATHER = 64;

  /** One queued response. */
  private static final class Response {
    final ByteBuffer header;
    final ByteBuffer body;
    final RegionTable.Entry entry;
    final FileChannel file;
    long filePosition;
    long fileRemaining;

    Response(ByteBuffer header, ByteBuffer body, RegionTable.Entry entry) {
      this.header = header;
      this.body = body;
      this.entry = entry;
      this.file = null;
    }

    Response(ByteBuffer header, RegionTable.Entry entry, long position, long length) {
      this.header = header;
      this.body = null;
      this.entry = entry;
      this.file = entry.file;
      this.filePosition = position;
      this.fileRemaining = length;
    }

    boolean done() {
      return !header.hasRemaining() && (body == null || !body.hasRemaining()) && fileRemaining == 0;
    }
  }

  private final ArrayDeque<Response> out = new ArrayDeque<>();
  private final ByteBuffer[] gather = new ByteBuffer[GATHER];

  int size() {
    return out.size();
  }

  boolean isEmpty() {
    return out.isEmpty();
  }

  /**
   * Queues a response whose body is {@code body}'s remaining bytes; {@code entry} (null for an
   * error) was acquired by the caller and is released once the response is written.
   */
  void addBuffer(ByteBuffer header, ByteBuffer body, RegionTable.Entry entry) {
    out.add(new Response(header, body, entry));
  }

  /** Queues a response whose body is sent from {@code entry}'s file by sendfile. */
  void addFile(ByteBuffer header, RegionTable.Entry entry, long position, long length) {
    out.add(new Response(header, entry, position, length));
  }

  /**
   * Writes as much as the socket takes now, releasing each response written in full.
   *
   * @param wrote told every write's byte count (zero included)
   */
  void writeTo(SocketChannel channel, LongConsumer wrote) throws IOException {
    while (!out.isEmpty()) {
      Response head = out.peek();
      if (head.file != null) {
        if (head.header.hasRemaining()) {
          int n = channel.write(head.header);
          wrote.accept(n);
          if (n == 0) {
            break;
          }
        }
        if (head.header.hasRemaining()) {
          break;
        }
        long n = head.file.transferTo(head.filePosition, head.fileRemaining, channel);
        wrote.accept(n);
        if (n == 0 && head.entry.checkShrunk()) {
          throw head.entry.shrunkError(null);
        }
        head.filePosition += n;
        head.fileRemaining -= n;
        if (head.fileRemaining > 0) {
          break;
        }
        finish(out.poll());
        continue;
      }
      int count = 0;
      for (Response r : out) {
        if (r.file != null || count > GATHER - 2) {
          break;
        }
        gather[count++] = r.header;
        gather[count++] = r.body;
      }
      try {
        wrote.accept(channel.write(gather, 0, count));
      } catch (IOException e) {
        throw shrunkOrSame(count / 2, e);
      } finally {
        Arrays.fill(gather, 0, count, null);
      }
      boolean progressed = false;
      while (!out.isEmpty() && out.peek().file == null && out.peek().done()) {
        finish(out.poll());
        progressed = true;
      }
      if (!out.isEmpty() && out.peek().file == null && !out.peek().done()) {
        break;
      }
      if (!progressed && !out.isEmpty() && out.peek().file == null) {
        break;
      }
    }
  }

  /**
   * A gathering write that failed may have read a mapping past its file's end (the kernel answers
   * EFAULT): if one of the first {@code responses} has a truncated file, says so.
   */
  private IOException shrunkOrSame(int responses, IOException e) {
    int i = 0;
    for (Response r : out) {
      if (i++ == responses) {
        break;
      }
      if (r.entry != null && r.entry.checkShrunk()) {
        return r.entry.shrunkError(e);
      }
    }
    return e;
  }

  /** Drops every queued response, releasing the regions they pinned. */
  void releaseAll() {
    Response r;
    while ((r = out.poll()) != null) {
      finish(r);
    }
  }

  private static void finish(Response r) {
    if (r.entry != null) {
      r.entry.release();
    }
  }
}
