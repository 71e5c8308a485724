/**
 * The shuffle service's local protocol: frames and messages over its Unix domain socket ({@link
 * io.memwire.shuffle.protocol.ServiceProtocol}), and the executor's side of it ({@link
 * io.memwire.shuffle.protocol.ServiceClient}). The service reads the same messages.
 */
package io.memwire.shuffle.protocol;
