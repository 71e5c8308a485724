/**
 * {@code memwire doctor}: a command-line check of a node (RDMA devices, ports, GIDs, libdisni,
 * memlock, the provider auto would pick) and of the path between two nodes (a real connection and a
 * one-sided read of a test region).
 */
package io.memwire.tools.doctor;
