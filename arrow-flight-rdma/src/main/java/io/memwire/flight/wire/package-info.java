/**
 * The data-plane messages carried inside a Flight DoExchange: the client's request, the server's
 * per-batch descriptors, and the client's FREE messages. Versioned, big-endian.
 */
package io.memwire.flight.wire;
