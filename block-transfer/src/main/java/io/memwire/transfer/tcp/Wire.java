package io.memwire.transfer.tcp;

import io.memwire.transfer.RemoteAccessException;

/**
 * The tcp provider's wire format (all integers big-endian). After the handshake (see {@link
 * Handshake}) the client sends fixed-size read requests and the server answers each with a response
 * header followed by the bytes, or by an error message. Responses carry the request id; the server
 * answers in request order but the client does not rely on it.
 *
 * <pre>
 * request, 32 bytes:   u8 type (1 = READ) | u8 flags (0) | u16 reserved (0) | u32 length
 *                      | u64 request id | u64 key | u64 address
 * response, 16 bytes:  u8 type (1 = DATA, 2 = ERROR) | u8 status | u16 reserved | u32 length
 *                      | u64 request id
 *                      then length bytes: the data (DATA), or a UTF-8 message (ERROR)
 * </pre>
 *
 * A request with an unknown type, or a length over {@link #MAX_READ_LENGTH}, is a protocol
 * violation: the server closes that connection only.
 */
final class Wire {
  static final int REQUEST_SIZE = 32;
  static final int RESPONSE_HEADER_SIZE = 16;
  static final byte TYPE_READ = 1;
  static final byte TYPE_DATA = 1;
  static final byte TYPE_ERROR = 2;

  /**
   * Largest read one request may ask for (the client splits at its max transfer size, at most
   * this).
   */
  static final int MAX_READ_LENGTH = 64 << 20;

  /** Longest error message a server sends. */
  static final int MAX_ERROR_LENGTH = 1024;

  static final byte STATUS_OK = 0;
  static final byte STATUS_UNKNOWN_KEY = 1;
  static final byte STATUS_OUT_OF_BOUNDS = 2;
  static final byte STATUS_REGION_CLOSED = 3;
  static final byte STATUS_INVALID_REQUEST = 4;
  static final byte STATUS_FILE_SHRUNK = 5;

  private Wire() {}

  static RemoteAccessException.Reason reason(byte status) {
    switch (status) {
      case STATUS_UNKNOWN_KEY:
        return RemoteAccessException.Reason.UNKNOWN_KEY;
      case STATUS_OUT_OF_BOUNDS:
        return RemoteAccessException.Reason.OUT_OF_BOUNDS;
      case STATUS_REGION_CLOSED:
        return RemoteAccessException.Reason.REGION_CLOSED;
      case STATUS_FILE_SHRUNK:
        return RemoteAccessException.Reason.FILE_SHRUNK;
      default:
        return RemoteAccessException.Reason.INVALID_REQUEST;
    }
  }
}
