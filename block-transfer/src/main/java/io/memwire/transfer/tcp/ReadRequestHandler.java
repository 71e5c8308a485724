package io.memwire.transfer.tcp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decodes one read request of a {@link ResponderSession}, checks it against the provider's table of
 * live regions and queues the answer: the region's bytes (from memory or the file's mapping, or by
 * sendfile for file reads of at least {@code memwire.tcp.sendfileMinBytes}) or an error response.
 * Requests that break the protocol are not answered; the session closes the connection.
 *
 * <p>Loop-confined, like its session.
 */
final class ReadRequestHandler {
  private static final Logger LOG = LoggerFactory.getLogger(ResponderSession.class);

  private final TcpProvider provider;
  private final String remote;
  private final ResponseQueue out;

  ReadRequestHandler(TcpProvider provider, String remote, ResponseQueue out) {
    this.provider = provider;
    this.remote = remote;
    this.out = out;
  }

  /**
   * Takes one {@link Wire#REQUEST_SIZE}-byte request from {@code in} and queues its response.
   *
   * @return null, or why the request breaks the protocol (nothing was queued then)
   */
  String handle(ByteBuffer in) {
    byte type = in.get();
    in.get();
    in.getShort();
    long length = Integer.toUnsignedLong(in.getInt());
    long id = in.getLong();
    long rkey = in.getLong();
    long address = in.getLong();
    if (type != Wire.TYPE_READ) {
      return "unknown request type " + type;
    }
    if (length > Wire.MAX_READ_LENGTH) {
      return "read of " + length + " bytes exceeds the frame limit " + Wire.MAX_READ_LENGTH;
    }
    if (length == 0) {
      error(id, Wire.STATUS_INVALID_REQUEST, "zero-length read");
      return null;
    }
    RegionTable.Entry e = provider.table().lookup(rkey);
    if (e == null) {
      if (provider.table().wasClosed(rkey)) {
        error(id, Wire.STATUS_REGION_CLOSED, "region was closed");
      } else {
        error(id, Wire.STATUS_UNKNOWN_KEY, "no live region has this key");
      }
      return null;
    }
    // Modular difference: any offset in [0, length - read] names bytes inside the region, and
    // nothing else does, whatever the two addresses are (no overflow can sneak past).
    long offset = address - e.address;
    if (offset < 0 || offset > e.length - length) {
      error(
          id,
          Wire.STATUS_OUT_OF_BOUNDS,
          "read [0x"
              + Long.toHexString(address)
              + ", +"
              + length
              + ") is outside the region [0x"
              + Long.toHexString(e.address)
              + ", +"
              + e.length
              + ")");
      return null;
    }
    if (e.shrunk()) {
      error(
          id,
          Wire.STATUS_FILE_SHRUNK,
          "the region's file was truncated on the serving node while registered");
      return null;
    }
    if (!e.acquire()) {
      error(id, Wire.STATUS_REGION_CLOSED, "region was closed");
      return null;
    }
    ByteBuffer header = header(Wire.TYPE_DATA, Wire.STATUS_OK, (int) length, id);
    if (e.file != null && length >= provider.sendfileMinBytes()) {
      out.addFile(header, e, e.fileOffset + offset, length);
      provider.sendfileReads.increment();
    } else {
      ByteBuffer body = e.memory.duplicate();
      body.limit((int) (offset + length)).position((int) offset);
      out.addBuffer(header, body, e);
    }
    provider.servedReads.increment();
    provider.servedBytes.add(length);
    return null;
  }

  private void error(long id, byte status, String message) {
    byte[] msg = message.getBytes(StandardCharsets.UTF_8);
    int len = Math.min(msg.length, Wire.MAX_ERROR_LENGTH);
    out.addBuffer(header(Wire.TYPE_ERROR, status, len, id), ByteBuffer.wrap(msg, 0, len), null);
    provider.servedErrors.increment();
    LOG.debug("refused a read from {}: {}", remote, message);
  }

  private static ByteBuffer header(byte type, byte status, int length, long id) {
    ByteBuffer h = ByteBuffer.allocate(Wire.RESPONSE_HEADER_SIZE);
    h.put(type).put(status).putShort((short) 0).putInt(length).putLong(id);
    return h.flip();
  }
}
