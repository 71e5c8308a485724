/**
 * Memwire's transport API: register memory ({@link io.memwire.transfer.MemoryRegion}), hand its
 * {@link io.memwire.transfer.RemoteRegion} to a reader, and read it with batched one-sided reads
 * over a {@link io.memwire.transfer.Connection} of a {@link io.memwire.transfer.TransferNode}.
 * Nothing here knows Spark or Arrow.
 */
package io.memwire.transfer;
