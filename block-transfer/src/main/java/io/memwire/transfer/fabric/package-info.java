/**
 * The fabric as the kernel shows it: the NIC's own counters ({@link NicCounters}, read from sysfs
 * by name, never assuming one driver's names), their change over a run ({@link CounterDeltas}, with
 * 32-bit wraps and the 4-octet data units undone) and a one-line verdict per port ({@link
 * FabricReport}); rdma_cm's per-port RoCE defaults in configfs ({@link RoceDefaults}) and the line
 * naming the path a verbs node uses ({@link FabricPath}). Read by executors, the shuffle service
 * and the tools; nothing here loads DiSNI.
 */
package io.memwire.transfer.fabric;
